"""What ``scripts/dev`` builds for each command, and that it can build before the venv exists."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from lakefs_mirror_devenv import DevenvError, RegionSpec
from lakefs_mirror_devenv.dev_builds import BUILDERS, builds_for, builds_for_regions

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_builds_lakefs_only_and_the_tests_everything() -> None:
    assert builds_for("demo") == ("lakeFS",)
    everything = ("lakeFS", "MinIO", "mc", "Helm", "Toxiproxy", "Prometheus", "promtool")
    assert builds_for("test") == builds_for("setup") == tuple(BUILDERS) == everything
    assert builds_for_regions((RegionSpec("one"), RegionSpec("two", "s3:m"))) == ("lakeFS", "MinIO")
    with pytest.raises(DevenvError, match="unknown scripts/dev command"):
        builds_for("shell")


def test_the_builds_import_nothing_outside_the_standard_library() -> None:
    # scripts/dev starts them with the system Python (no site-packages here: -S) while pip fills the venv.
    probe = (
        "import sys, lakefs_mirror_devenv.dev_builds; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'yaml', 'psycopg', 'boto3', 'lakefs_sdk', 'dagster'}))"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'devenv'}"}
    done = subprocess.run([sys.executable, "-S", "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
