"""Property-based requests from the OpenAPI document against the live API: never a 5xx answer.

Needs the optional ``schemathesis`` package (skipped without it: it is not a dependency of the project).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import Api

pytestmark = pytest.mark.integration

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


@pytest.mark.skipif(not SCHEMATHESIS.exists() and not shutil.which("schemathesis"), reason="schemathesis not installed")
def test_generated_requests_never_get_a_server_error(api: Api, tmp_path: Path) -> None:
    exe = str(SCHEMATHESIS) if SCHEMATHESIS.exists() else "schemathesis"
    report = tmp_path / "junit.xml"
    started = time.monotonic()
    proc = subprocess.run(
        [
            exe, "run", f"{api.url}/service/replication/v1/openapi.json",
            "--url", api.url,
            "--auth", api.user,
            "--checks", "not_a_server_error",
            "--max-examples", os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "40"),
            "--request-timeout", "30",
            "--report", "junit", "--report-junit-path", str(report),
            "--no-color",
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    print(proc.stdout[-3000:], f"\nschemathesis took {elapsed:.1f}s")
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
