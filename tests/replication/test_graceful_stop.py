"""``lakefs-mirror sync`` stopped by SIGTERM mid-pass, or by Ctrl-C (SIGINT) between passes: no traceback, one line
saying so, exit status 143 or 130, no in-flight record left behind, and a restart converges the mirror."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.replication_config import config_variant

from tests.cli_process import run_cli

from .conftest import assert_mirror_equals_source

pytestmark = pytest.mark.integration

CHECKOUT = Path(__file__).resolve().parents[2]


def _until(what: str, condition: Callable[[], bool], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _sync(config: Path, cwd: Path, *extra: str, failpoint: str = "") -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")]))
    if failpoint:
        env["LAKEFS_MIRROR_FAILPOINT"] = failpoint
    argv = [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(config), "sync", *extra]
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(process: subprocess.Popen[str], signum: signal.Signals) -> tuple[int, str]:
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def test_sync_stops_cleanly_on_sigterm_mid_pass_and_on_sigint_between_passes(
    lakefs_env: Environment, isolated_regions: Any, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    config_path, service = isolated_regions
    src_svc, dst_svc = service("region-a"), service("region-b")
    src = src_svc.client("region-a")
    repo = unique_name("stop")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    s3 = lakefs_env.region("region-a").s3_gateway_client()
    for i in range(6):
        s3.put_object(Bucket=repo, Key=f"main/data/{i}.bin", Body=os.urandom(1000 + i))
    src.commit(repo, "main", "six objects")
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    # One object at a time: the hold below is mid-pass.
    west = config_variant(config_path("region-b"), tmp_path / "region-b.yaml", transfer={"concurrency": 1})

    # SIGTERM while the pass is held after its third object (the hold is never released).
    never = tmp_path / "never-released"
    held = _sync(west, tmp_path, "--once", failpoint=f"after_object_copy:3:hold={never}")
    try:
        _until("the ref in flight", lambda: bool(dst_svc.mirrors.refs_in_flight(mirror.id)))
        code, err = _stop(held, signal.SIGTERM)
    finally:
        if held.poll() is None:
            held.kill()
            held.communicate(timeout=30)
    assert code == 143, err
    assert "Traceback" not in err and "sync stopped by SIGTERM" in err
    assert dst_svc.mirrors.refs_in_flight(mirror.id) == []  # not left to go stale

    # A restart converges; then Ctrl-C while the loop waits for its next pass.
    again = run_cli("--config", str(west), "sync", "--once", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert_mirror_equals_source(src, repo, dst_svc.client("region-b"), mirror.name)
    looping = _sync(west, tmp_path, "--progress", "off")
    try:
        assert looping.stdout is not None
        ready, _, _ = select.select([looping.stdout], [], [], 120)  # the first pass's report: now it waits
        assert ready and looping.stdout.readline().startswith(f"mirror {mirror.name}")
        code, err = _stop(looping, signal.SIGINT)
    finally:
        if looping.poll() is None:
            looping.kill()
            looping.communicate(timeout=30)
    assert code == 130, err
    assert "Traceback" not in err and "sync stopped by SIGINT" in err
