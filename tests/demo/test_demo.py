"""The README's demo command, end to end: it must print a converged, matching mirror and stop its servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lakefs_mirror_devenv.processes import pid_alive

from lakefs_mirror_dagster.cli import main


def test_demo_mirror_converges_and_cleans_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--state-dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "SUCCESS" in out and "DIFFERENT" not in out
    for ref in ("branch main", "branch dev", "branch experiment", "tag    v1.0", "tag    v1.1"):
        assert ref in out, ref
    described = json.loads((tmp_path / "demo" / "environment.json").read_text())
    assert not any(pid_alive(r["pid"]) for r in described["regions"].values())
