"""The README's demo command, end to end: it must print a converged, matching mirror and stop its servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lakefs_mirror_devenv.demo.quiet import stderr_to
from lakefs_mirror_devenv.processes import pid_alive

from lakefs_mirror_dagster.cli import main


def test_demo_mirror_converges_and_cleans_up(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As on a machine that never ran Dagster: creating its telemetry id here would print Dagster's banner.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "users_dagster_home"))
    assert main(["dev", "demo", "--state-dir", str(tmp_path / "demo")]) == 0
    out, err = capfd.readouterr()  # file descriptors: Spark's JVM writes to them directly
    assert "SUCCESS" in out and "DIFFERENT" not in out
    for ref in ("branch main", "branch dev", "branch experiment", "tag    v1.0", "tag    v1.1"):
        assert ref in out, ref
    # Only the demo's own lines: no telemetry banner, no Spark WARN lines or progress bar, no Dagster log lines
    # (on stderr at most the lines of a lakeFS build, on a machine where it was not built yet).
    assert [line for line in err.splitlines() if not line.startswith("[devenv] ")] == []
    assert all(line.startswith(("[demo]", "  ")) for line in out.splitlines()), out
    assert "Telemetry" not in out and "WARN" not in out
    assert (tmp_path / "demo" / "demo.log").stat().st_size > 0  # where they went instead
    described = json.loads((tmp_path / "demo" / "environment.json").read_text())
    assert not any(pid_alive(r["pid"]) for r in described["regions"].values())


def test_other_output_goes_to_the_log_and_shows_when_the_demo_fails(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "demo.log"
    with stderr_to(log):
        print("python chatter", file=sys.stderr)
        subprocess.run(["sh", "-c", "echo child chatter >&2"], check=True)  # like Spark's JVM
    assert capfd.readouterr().err == ""
    assert log.read_text().splitlines() == ["python chatter", "child chatter"]
    with pytest.raises(RuntimeError, match="boom"), stderr_to(log, tail_lines=2):
        print("why it failed", file=sys.stderr)
        raise RuntimeError("boom")
    err = capfd.readouterr().err
    assert err.splitlines() == [f"[demo] failed; the last lines of {log}:", "child chatter", "why it failed"]
