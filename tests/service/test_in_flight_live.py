"""A branch in flight, seen from other processes: while ``lakefs-mirror sync`` (a process of its own, held mid-copy
by a failpoint) advances a new mirror's branch, ``GET .../mirrors/{id}`` (curl against the API of the source region)
and ``lakefs-mirror status --json`` show it with its progress; once the sync is done, ``in_flight`` is gone.

Real lakeFS regions (the source on MinIO), objects written through the source's S3 gateway with boto3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.service import create_app, running_server
from tests.cli_process import run_cli
from tests.replication.conftest import isolated_regions  # noqa: F401 (fixture)

from .conftest import curl

pytestmark = pytest.mark.integration

OBJECTS = 6


def _poll(read: Callable[[], Any], done: Callable[[Any], bool], timeout_s: float = 120.0) -> Any:
    """``read()`` until ``done`` says so (a loaded machine starts the sync process slowly: a generous bound)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"still {value!r} after {timeout_s}s"
        time.sleep(0.3)


def test_a_branch_in_flight_shows_its_progress_in_the_api_and_status(
    lakefs_env: Environment,
    isolated_regions: Any,  # noqa: F811
    unique_name: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config_path, service = isolated_regions
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # status reads promotions from a Dagster instance
    (tmp_path / "dagster.yaml").write_text("")
    src_svc = service("region-a")
    region_a = lakefs_env.region("region-a")
    repo = unique_name("flight")
    src = src_svc.client("region-a")
    src.create_repository(repo, region_a.namespace_for(repo))
    s3 = region_a.s3_gateway_client()
    for i in range(OBJECTS):
        s3.put_object(Bucket=repo, Key=f"main/data/{i}.bin", Body=os.urandom(1000 + i))
    head = src.commit(repo, "main", "six objects").id
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    # The destination region syncs in a process of its own, one object at a time, held at its third object.
    west = config_path("region-b")
    raw = yaml.safe_load(west.read_text())
    raw.setdefault("transfer", {})["concurrency"] = 1
    west.write_text(yaml.safe_dump(raw))
    release = tmp_path / "release"
    env = dict(os.environ, LAKEFS_MIRROR_FAILPOINT=f"after_object_copy:3:hold={release}")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    sync = subprocess.Popen(
        [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(west), "sync", "--once", "--json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with running_server(create_app(src_svc), "127.0.0.1", free_port()) as url:
            key = f"{region_a.access_key_id}:{region_a.secret_access_key}"
            mirror_url = f"{url}/service/replication/v1/repositories/{repo}/mirrors/{mirror.id}"

            def main_branch() -> dict[str, Any] | None:
                answer = curl(mirror_url, "-u", key)
                assert answer.status == 200, answer.body
                return next((b for b in answer.body["branches"] if b["branch"] == "main"), None)

            held = _poll(main_branch, lambda b: b is not None and (b["in_flight"] or {}).get("objects_planned"))
            flight = held["in_flight"]
            assert (flight["state"], flight["source_commit_id"]) == ("in_flight", head)
            assert flight["objects_planned"] == OBJECTS and flight["objects_done"] < OBJECTS
            assert flight["ranges_planned"] == 1
            assert held["mirrored_commit_id"] is None  # its first sync has not promoted anything yet

            status = run_cli("--config", str(west), "status", "--json", "--recent", "0", cwd=tmp_path)
            assert status.returncode == 0, status.stderr
            [shown] = [b for m in json.loads(status.stdout) for b in m["branches"] if b["branch"] == "main"]
            assert shown["in_flight"]["state"] == "in_flight" and shown["in_flight"]["source_commit_id"] == head
            assert shown["in_flight"]["objects_done"] < shown["in_flight"]["objects_planned"] == OBJECTS

            release.touch()
            out, err = sync.communicate(timeout=60)
            assert sync.returncode == 0, out + err
            done = main_branch()
            assert done is not None and (done["in_flight"], done["mirrored_commit_id"]) == (None, head)
        after = run_cli("--config", str(west), "status", "--json", "--recent", "0", cwd=tmp_path)
        [idle] = [b for m in json.loads(after.stdout) for b in m["branches"] if b["branch"] == "main"]
        assert idle["in_flight"] is None and idle["in_sync"]
    finally:
        release.touch()
        if sync.poll() is None:
            sync.kill()
            sync.communicate(timeout=30)
