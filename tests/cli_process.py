"""``lakefs-mirror`` as a user runs it: a separate process, so an uncaught exception shows as a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI with this checkout's package first on the path; stdout and stderr captured as text."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_CHECKOUT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "lakefs_mirror_dagster.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
