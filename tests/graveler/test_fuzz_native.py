"""A short run of the range-file fuzzer (``fuzz_native.py``): the C reader built with AddressSanitizer and
UndefinedBehaviorSanitizer reads 600 mutated range and metarange files as the Python loops read them, without a
sanitizer report, a crash or a hang. The long run is one command: ``python -m tests.graveler.fuzz_native``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.graveler.fuzz_native import fuzz


def _has_asan() -> bool:
    if shutil.which("gcc") is None:
        return False
    found = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60)
    return Path(found.stdout.strip()).is_file()


@pytest.mark.skipif(not _has_asan(), reason="gcc with libasan is needed to build the sanitized extension")
def test_mutated_range_files_read_alike_in_c_and_python_under_the_sanitizers(tmp_path: Path) -> None:
    report = fuzz(600, seed=20261127, hang_seconds=60.0, save_dir=tmp_path)
    assert report.crashes == [], report.crashes
    assert report.hangs == [], report.hangs
    assert report.disagreements == [], report.disagreements[:3]
    # the mutations reached every step: files read whole, and refusals at the index, the blocks and the records
    assert report.outcomes["ok"] > 30, report.outcomes
    for step in ("footer", "index", "blocks", "records"):
        assert report.outcomes[f"refused:{step}"] > 5, report.outcomes
