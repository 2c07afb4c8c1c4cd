"""lakeFS action hooks, live: lakeFS (built from Go) runs the action ``mirrors create --install-hooks`` committed,
its webhook reaches ``serve``, and a ``sync`` process whose polling interval is an hour moves the mirror within
seconds. Also the endpoint's answers to what a hook (or anyone) may send, through curl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.lakefs import LakeFSClient, LakeFSNotFound
from lakefs_mirror_dagster.region import ACTION_PATH, ReplicationService
from lakefs_mirror_dagster.service import create_app, running_server
from lakefs_mirror_dagster.service.hooks import HOOKS_PATH
from tests.cli_process import run_cli
from tests.replication.conftest import isolated_regions  # noqa: F401 (fixture)

from .conftest import curl

pytestmark = pytest.mark.integration

Regions = tuple[Callable[[str], Path], Callable[[str], ReplicationService]]

#: lakeFS's cache of a ref's action files (pkg/catalog/actions_source.go: 5 s expiry, up to 2.5 s jitter).
LAKEFS_ACTIONS_CACHE_S = 8.0


def with_hooks(regions: Regions, region: str, **settings: Any) -> Path:
    """The isolated region config with ``hooks`` (and ``extra`` top-level keys) set, before any service reads it."""
    path = regions[0](region)
    raw = yaml.safe_load(path.read_text())
    raw["hooks"] = {k: v for k, v in settings.items() if k != "extra"}
    raw.update(settings.get("extra", {}))
    path.write_text(yaml.safe_dump(raw))
    return path


def _post(url: str, body: str, *headers: str) -> Any:
    args = [url, "-X", "POST", "--header", "Content-Type: application/json", "--data", body]
    for header in headers:
        args += ["--header", header]
    return curl(*args)


def _source(lakefs_env: Environment, client_for: Callable[[str], LakeFSClient], repo: str) -> None:
    client = client_for("region-a")
    client.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    client.upload_object(repo, "main", "data/a.json", b'{"a": 1}')
    client.commit(repo, "main", "first")


def test_the_endpoint_queues_known_refs_refuses_bad_calls_and_never_fails_a_hook(
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    isolated_regions: Regions,  # noqa: F811
    unique_name: Any,
) -> None:
    with_hooks(isolated_regions, "region-a", enabled=True, secret="s3cret")
    service = isolated_regions[1]("region-a")
    repo, name = unique_name("hooksrc"), unique_name("hookmirror")
    _source(lakefs_env, client_for, repo)
    mirror = service.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    event = {"event_type": "post-commit", "repository_id": repo, "branch_id": "main", "commit_id": "c" * 64}
    with running_server(create_app(service), "127.0.0.1", free_port()) as base:
        url = base + HOOKS_PATH
        assert _post(url, json.dumps(event)).status == 401
        assert _post(url, json.dumps(event), "X-Lakefs-Mirror-Secret: wrong").status == 401
        assert service.mirrors.wakeups("region-b") == []
        sent = _post(url, json.dumps(event), "X-Lakefs-Mirror-Secret: s3cret")
        assert (sent.status, sent.body) == (200, {"queued": 1, "event_type": "post-commit"})
        tag = {"event_type": "post-create-tag", "repository_id": repo, "tag_id": "v1"}
        assert _post(url + "?secret=s3cret", json.dumps(tag)).body["queued"] == 1
        # a repository without mirrors, an event that moves no ref: 200, nothing queued
        for other in ({**event, "repository_id": "no-such-repo"}, {**event, "event_type": "pre-commit"}):
            answer = _post(url, json.dumps(other), "X-Lakefs-Mirror-Secret: s3cret")
            assert (answer.status, answer.body["queued"]) == (200, 0)
        for bad in ("{not json", json.dumps({"event_type": "post-commit"}), json.dumps([event])):
            answer = _post(url, bad, "X-Lakefs-Mirror-Secret: s3cret")
            assert answer.status == 400, answer.body
        queued = service.mirrors.wakeups("region-b")
        assert {(w.mirror_id, w.kind, w.ref) for w in queued} == {
            (mirror.id, "branch", "main"),
            (mirror.id, "tag", "v1"),
        }


def test_hooks_answer_404_unless_enabled(api: Any) -> None:
    answer = _post(api.url + HOOKS_PATH, json.dumps({"event_type": "post-commit", "repository_id": "repo"}))
    assert answer.status == 404 and "hooks.enabled" in answer.body["message"]


@contextmanager
def _sync_process(config: Path, mirror: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``lakefs-mirror sync --mirror`` as a user starts it, stopped (bounded) at the end."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]),
    )
    argv = [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(config), "sync", "--mirror", mirror]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def _wait_head(client: LakeFSClient, repo: str, branch: str, want: str, timeout_s: float) -> float | None:
    """Seconds until ``repo``'s ``branch`` is at ``want``, or None after ``timeout_s``."""
    started = time.monotonic()
    for _ in range(int(timeout_s / 0.1) + 1):
        try:
            if client.get_branch_head(repo, branch) == want:
                return time.monotonic() - started
        except LakeFSNotFound:
            pass
        if time.monotonic() - started > timeout_s:
            return None
        time.sleep(0.1)
    return None


def test_a_lakefs_hook_moves_the_mirror_long_before_the_polling_pass(
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    isolated_regions: Regions,  # noqa: F811
    unique_name: Any,
    tmp_path: Path,
) -> None:
    hourly = {"commit_sensor": {"process_branches_duration": "1h"}, "validator": {"run_interval": "1h"}}
    source_config = with_hooks(isolated_regions, "region-a", enabled=True)
    mirror_config = with_hooks(isolated_regions, "region-b", enabled=True, poll_interval="200ms", extra=hourly)
    service = isolated_regions[1]("region-a")
    repo, name = unique_name("hooksrc"), unique_name("hookmirror")
    _source(lakefs_env, client_for, repo)
    src, dst = client_for("region-a"), client_for("region-b")
    with running_server(create_app(service), "127.0.0.1", free_port()) as base:
        hook_url = base + HOOKS_PATH

        def create(mirror: str) -> subprocess.CompletedProcess[str]:
            return run_cli(
                "--config", str(source_config), "mirrors", "create", "--repository", repo, "--name", mirror,
                "--region", "region-b", "--storage-namespace", lakefs_env.region("region-b").namespace_for(mirror),
                "--install-hooks", hook_url, cwd=tmp_path,
            )  # fmt: skip

        created = create(name)
        installed_at = time.monotonic()
        assert created.returncode == 0, created.stderr
        assert f"{ACTION_PATH} committed to {repo}" in created.stderr
        action = yaml.safe_load(src.get_object(repo, "main", ACTION_PATH))
        assert action["hooks"][0]["properties"]["url"] == hook_url and "post-commit" in action["on"]

        with _sync_process(mirror_config, name, tmp_path / "sync.log"):
            first = src.get_branch_head(repo, "main")
            assert _wait_head(dst, name, "main", first, 30) is not None, (tmp_path / "sync.log").read_text()
            # the full pass is done; the next one is an hour away. Data through the S3 gateway, a commit by REST:
            gateway = lakefs_env.region("region-a").s3_gateway_client()
            gateway.put_object(Bucket=repo, Key="main/data/b.json", Body=b'{"b": 2}')
            commit = src.commit(repo, "main", "second").id
            took = _wait_head(dst, name, "main", commit, 20)
            assert took is not None, (tmp_path / "sync.log").read_text()
            # a branch created at the source: the post-create-branch hook syncs it too. lakeFS caches the listing of
            # a ref's _lakefs_actions/ by ref name for 5 s (+ up to 2.5 s jitter): a branch created from main within
            # that time of the install may still see no action (polling finds it), so the test waits it out.
            time.sleep(max(0.0, installed_at + LAKEFS_ACTIONS_CACHE_S - time.monotonic()))
            src.create_branch(repo, "feature", "main")
            assert _wait_head(dst, name, "feature", commit, 20) is not None, (tmp_path / "sync.log").read_text()
        assert dst.get_object(name, "main", "data/b.json") == b'{"b": 2}'
        assert isolated_regions[1]("region-b").mirrors.wakeups("region-b") == []  # every wake-up handled

        again = create(unique_name("other"))
        # a second mirror of the same repository with the same hook URL: the action file is already there
        assert again.returncode == 0 and "already in" in again.stderr, again.stderr
