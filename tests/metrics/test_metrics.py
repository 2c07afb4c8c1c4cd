"""The metrics as a scraper reads them, without lakeFS: ``serve``'s ``GET /metrics`` and the ``sync`` loop's listener
fetched with curl and parsed with prometheus_client's own parser, over a real SQLite mirrors database and a real
local store. The live proof with Prometheus scraping both against lakeFS regions is test_prometheus_live.py."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv.processes import free_port
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from lakefs_mirror_dagster.cli import ExitCode
from lakefs_mirror_dagster.config import parse_config
from lakefs_mirror_dagster.lakefs.client import _failed_status, _operation
from lakefs_mirror_dagster.metrics import SyncMetrics, request_metrics
from lakefs_mirror_dagster.mirrors import MirrorState
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import (
    BlockReason,
    MirrorSyncResult,
    RefAction,
    RefKind,
    RefResult,
    SyncPass,
    TransferStats,
)
from lakefs_mirror_dagster.service import create_app, running_server
from lakefs_mirror_dagster.storage import InFlightFigures
from lakefs_mirror_dagster.storage.errors import ObjectNotFound, StorageError
from lakefs_mirror_dagster.storage.local import LocalBlockstore
from tests.cli_process import run_cli
from tests.config.config_data import minimal

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition, by name and sorted labels (prometheus_client's parser, not ours)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


def curl(url: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET, as a scraper without credentials sends it."""
    done = subprocess.run(
        ["curl", "-s", "--max-time", "20", "-o", "-", "-w", "\n%{http_code} %{content_type}", url],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    body, _, tail = done.stdout.rpartition("\n")
    status, _, content_type = tail.partition(" ")
    return int(status or 0), content_type, body


def config_data(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return minimal(mirrors_database={"type": "sqlite", "sqlite": {"path": str(tmp_path / "m.db")}}, **extra)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ReplicationService]:
    svc = ReplicationService(parse_config(config_data(tmp_path), env={}))
    yield svc
    svc.close()


# ------------------------------------------------------------------------------------------ serve's GET /metrics
def test_serve_answers_metrics_without_credentials_with_each_branchs_lag_and_state(
    service: ReplicationService,
) -> None:
    db, org, now = service.mirrors, service.config.organization_id, dt.datetime.now(dt.UTC)

    def mirror(name: str, state: MirrorState) -> str:
        return db.create_mirror(
            organization_id=org,
            source_region="us-west-2",
            source_repository="src",
            name=name,
            destination_region=service.config.region,
            storage_namespace=f"s3://bucket/{name}",
            state=state,
        ).id

    good, broken = mirror("good", MirrorState.ACTIVE), mirror("broken", MirrorState.FAILED)
    old = now - dt.timedelta(seconds=300)
    db.record_branch(good, "main", source_commit_id="a" * 64, mirrored_commit_id="a" * 64, lag_seconds=4.5)
    db.record_branch(good, "dev", source_commit_id="b" * 64, source_commit_time=old, mirrored_commit_id="c" * 64)
    db.record_branch(good, "stuck", source_commit_id="d" * 64, source_commit_time=old)
    db.block_branch(good, "stuck", commit_id="d" * 64, reason="missing", retry_after=now + dt.timedelta(hours=1))
    db.record_branch(good, "due", source_commit_id="e" * 64, source_commit_time=old)
    db.block_branch(good, "due", commit_id="e" * 64, reason="error", retry_after=now - dt.timedelta(seconds=1))
    db.record_branch(broken, "main", source_commit_id="f" * 64, mirrored_commit_id="f" * 64)

    with running_server(create_app(service), "127.0.0.1", free_port()) as url:
        status, content_type, body = curl(url + "/metrics")
    assert status == 200 and content_type.startswith("text/plain"), body
    found = samples(body)
    assert value(found, "lakefs_mirror_status_up") == 1
    assert value(found, "lakefs_mirror_branch_behind_seconds", mirror="good", branch="main") == 0
    assert value(found, "lakefs_mirror_branch_lag_seconds", mirror="good", branch="main") == 4.5
    behind = value(found, "lakefs_mirror_branch_behind_seconds", mirror="good", branch="dev")
    assert behind is not None and behind >= 300
    expected = {
        ("good", "main"): "in_sync",
        ("good", "dev"): "behind",
        ("good", "stuck"): "cooling",
        ("good", "due"): "blocked",
        ("broken", "main"): "failed",
    }
    for (name, branch), state in expected.items():
        states = {
            dict(labels)["state"]: v
            for (metric, labels), v in found.items()
            if metric == "lakefs_mirror_branch_state"
            and dict(labels)["mirror"] == name
            and dict(labels)["branch"] == branch
        }
        assert states == {s: float(s == state) for s in ("in_sync", "behind", "blocked", "cooling", "failed")}
    assert value(found, "lakefs_mirror_mirror_state", mirror="broken", state="failed") == 1
    assert value(found, "lakefs_mirror_mirror_state", mirror="good", state="failed") == 0
    # no commit id in any label
    assert not any(len(v) == 64 for _, labels in found for _, v in labels)


def test_a_database_that_does_not_answer_is_a_gauge_not_a_failed_scrape(
    service: ReplicationService, tmp_path: Path
) -> None:
    service.mirrors.close()
    (tmp_path / "m.db").write_bytes(b"not a database " * 1000)  # what the next connection opens
    with running_server(create_app(service), "127.0.0.1", free_port()) as url:
        status, _, body = curl(url + "/metrics")
    assert status == 200, body
    found = samples(body)
    assert value(found, "lakefs_mirror_status_up") == 0
    assert value(found, "process_cpu_seconds_total") is not None  # the rest of the scrape is there


# ------------------------------------------------------------------------------------------ counters and hooks
def test_a_pass_counts_copies_by_mirror_and_errors_by_kind() -> None:
    def ref(name: str, action: RefAction, **stats: int) -> RefResult:
        return RefResult(RefKind.BRANCH, name, "a" * 64, None, "a" * 64, action, stats=TransferStats(**stats))

    blocked = ref("b", RefAction.BLOCKED)
    blocked.blocked_by, blocked.error = BlockReason.MISSING, "validation failed"
    results = [
        MirrorSyncResult("m1", "src", [ref("main", RefAction.ADVANCED, objects_copied=3, bytes_copied=300, commits=2)]),
        MirrorSyncResult("m1", "src", [ref("dev", RefAction.CREATED, objects_copied=1, bytes_copied=5, commits=1)]),
        MirrorSyncResult("m2", "src", [blocked, ref("x", RefAction.DEFERRED)]),
        MirrorSyncResult("m3", "src", error="LakeFSUnavailable: down"),
    ]
    metrics = SyncMetrics()
    registry = CollectorRegistry()
    metrics.register(registry)
    metrics.observe(SyncPass("full", results, 1.5))
    found = samples(generate_latest(registry).decode())
    assert value(found, "lakefs_mirror_objects_copied_total", mirror="m1") == 4
    assert value(found, "lakefs_mirror_bytes_copied_total", mirror="m1") == 305
    assert value(found, "lakefs_mirror_commits_copied_total", mirror="m1") == 3
    assert value(found, "lakefs_mirror_objects_copied_total", mirror="m2") == 0  # present from its first pass
    assert value(found, "lakefs_mirror_errors_total", mirror="m2", kind="blocked_missing") == 1
    assert value(found, "lakefs_mirror_errors_total", mirror="m3", kind="mirror") == 1
    assert value(found, "lakefs_mirror_errors_total", mirror="m2", kind="ref") is None  # deferred is no error
    assert value(found, "lakefs_mirror_ref_syncs_total", mirror="m2", action="deferred") == 1
    assert value(found, "lakefs_mirror_sync_pass_duration_seconds_count", kind="full") == 1
    assert value(found, "lakefs_mirror_sync_pass_duration_seconds_sum", kind="full") == 1.5
    last = value(found, "lakefs_mirror_sync_last_pass_timestamp_seconds")
    assert last is not None and abs(last - time.time()) < 3600


def test_a_pass_that_copied_shows_the_copies_in_flight_it_chose_and_the_round_trip_it_chose_them_from() -> None:
    far = MirrorSyncResult("far", "src", copies_in_flight=InFlightFigures(96, 128, True, 0.083))
    fixed = MirrorSyncResult("near", "src", copies_in_flight=InFlightFigures(3, 16, False, None))
    idle = MirrorSyncResult("idle", "src")  # copied nothing: no figures, no samples
    metrics = SyncMetrics()
    registry = CollectorRegistry()
    metrics.register(registry)
    metrics.observe(SyncPass("full", [far, fixed, idle], 2.0))
    found = samples(generate_latest(registry).decode())
    assert value(found, "lakefs_mirror_copies_in_flight_limit", mirror="far") == 128
    assert value(found, "lakefs_mirror_source_read_round_trip_seconds", mirror="far") == 0.083
    assert value(found, "lakefs_mirror_copies_in_flight_limit", mirror="near") == 16
    assert value(found, "lakefs_mirror_source_read_round_trip_seconds", mirror="near") is None  # fewer than 16 reads
    assert value(found, "lakefs_mirror_copies_in_flight_limit", mirror="idle") is None


def test_store_requests_are_timed_by_operation_once_each_and_never_by_key(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    request_metrics().register(registry)

    def count(operation: str, name: str = "lakefs_mirror_store_request_duration_seconds_count") -> float:
        return value(samples(generate_latest(registry).decode()), name, store="local", operation=operation) or 0.0

    def failures(operation: str) -> float:
        found = samples(generate_latest(registry).decode())
        return value(found, "lakefs_mirror_request_failures_total", system="local", operation=operation) or 0.0

    store = LocalBlockstore(root=tmp_path / "store")
    before = {op: count(op) for op in ("put", "head", "get", "list", "delete")}
    missing_before = failures("get")
    store.write_bytes("local://bucket/secret-key/object.bin", b"x" * 10)  # over write_stream: one put
    assert store.stat("local://bucket/secret-key/object.bin") is not None
    assert store.read_bytes("local://bucket/secret-key/object.bin") == b"x" * 10  # over open_read: one get
    assert [i.size for i in store.list_prefix("local://bucket/secret-key/")] == [10]
    with pytest.raises(ObjectNotFound):
        store.read_bytes("local://bucket/secret-key/missing.bin")
    put_failures = failures("put")
    with pytest.raises(StorageError):  # a file where the key needs a directory: the write fails
        store.write_bytes("local://bucket/secret-key/object.bin/below", b"y")
    store.delete("local://bucket/secret-key/object.bin")
    assert {op: count(op) - before[op] for op in before} == {"put": 2, "head": 1, "get": 2, "list": 1, "delete": 1}
    assert failures("get") - missing_before == 0  # "not there" is an answer, not a failed request
    assert failures("put") - put_failures == 1
    assert "secret-key" not in generate_latest(registry).decode()


def test_lakefs_operations_are_sdk_method_names() -> None:
    class Api:
        def get_branch(self) -> None: ...

    assert _operation(Api().get_branch) == "get_branch"
    assert _operation(lambda: None) == "other"
    # an answer such as 404 or 409 is no failed request; none, 429 or a 5xx is
    assert [_failed_status(s) for s in (200, 404, 409, 429, 500, 503, None)] == [
        False, False, False, True, True, True, True
    ]  # fmt: skip


# ------------------------------------------------------------------------------------------ sync's listener
def _write_config(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "config.yaml"
    data = config_data(tmp_path, commit_sensor={"process_branches_duration": "1s"}, **extra)
    path.write_text(yaml.safe_dump(data))
    return path


def _wait_for(url: str, done: Any, timeout_s: float = 60.0) -> Samples:
    deadline = time.monotonic() + timeout_s
    while True:
        status, _, body = curl(url)
        if status == 200 and done(samples(body)):
            return samples(body)
        assert time.monotonic() < deadline, f"{url}: {status} {body[:500]}"
        time.sleep(0.3)


def _sync_loop(config: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]),
    )
    argv = [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(config), "sync", *args]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    try:
        _, err = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate(timeout=10)
    return err


@pytest.mark.parametrize("how", ["config", "flag"])
def test_the_sync_loop_serves_its_passes_on_metrics_listen_address_or_the_flag(tmp_path: Path, how: str) -> None:
    port = free_port()
    if how == "config":
        loop = _sync_loop(_write_config(tmp_path, metrics={"listen_address": f"127.0.0.1:{port}"}))
    else:  # the flag wins over the key
        config = _write_config(tmp_path, metrics={"listen_address": f"127.0.0.1:{free_port()}"})
        loop = _sync_loop(config, "--metrics-listen", f"127.0.0.1:{port}")
    try:
        found = _wait_for(
            f"http://127.0.0.1:{port}/metrics",
            lambda s: (value(s, "lakefs_mirror_sync_pass_duration_seconds_count", kind="full") or 0) >= 2,
        )
        assert value(found, "lakefs_mirror_status_up") == 1
    finally:
        err = _stop(loop)
    assert f"metrics at http://127.0.0.1:{port}/metrics" in err


def test_without_an_address_the_loop_listens_nowhere(tmp_path: Path) -> None:
    done = run_cli("--config", str(_write_config(tmp_path)), "sync", "--once", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "metrics at" not in done.stderr


@pytest.mark.parametrize(
    ("args", "extra", "named"),
    [
        (["--metrics-listen", "9108"], {}, "--metrics-listen: invalid listen address '9108'"),
        (["--metrics-listen", "127.0.0.1:http"], {}, "--metrics-listen: invalid listen address"),
        ([], {"metrics": {"listen_address": "localhost"}}, "metrics.listen_address"),
    ],
)
def test_a_bad_address_is_refused_with_one_line(
    tmp_path: Path, args: list[str], extra: dict[str, Any], named: str
) -> None:
    done = run_cli("--config", str(_write_config(tmp_path, **extra)), "sync", "--once", *args, cwd=tmp_path)
    assert done.returncode == ExitCode.CONFIG  # a listen address is configuration, from the flag or the file
    assert len(done.stderr.strip().splitlines()) == 1 and named in done.stderr, done.stderr
    assert not (tmp_path / "m.db").exists()  # refused before anything started


def test_an_address_in_use_is_refused_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(
            "--config", str(_write_config(tmp_path)), "sync", "--once", "--metrics-listen", f"127.0.0.1:{port}",
            cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == ExitCode.CONFIG  # a listen address is configuration, from the flag or the file
    assert done.stderr.strip().splitlines() == [
        f"lakefs-mirror: config: --metrics-listen: cannot listen on '127.0.0.1:{port}': Address already in use"
    ]
