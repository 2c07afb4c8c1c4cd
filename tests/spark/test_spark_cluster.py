"""Spark transfer and validation on a real standalone cluster (``spark.master: spark://127.0.0.1:PORT``).

The source is written as users write it (boto3 through region-a's S3 gateway); the driver is a process of its
own (``cluster_driver.py``) whose config names the cluster, and whose executors are separate JVMs started by
the cluster's workers, importing this package through ``spark.executorEnv.PYTHONPATH``.

Every application costs a driver JVM and two executor JVMs (tens of seconds on a busy 2-core machine), so one
sync runs once for the module (``cluster_sync``) and the tests check what it did: the mirror and where its
tasks ran; the Python worker killed in the middle of the transfer task, and Spark's retry; and that no secret
reached Spark's event log, the driver UI's environment page or the cluster's logs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient, LakeFSNotFound
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.storage import join_namespace
from tests.replication.conftest import assert_mirror_equals_source, assert_ref_complete, content

from .cluster import StandaloneCluster

pytestmark = pytest.mark.integration

_CHECKOUT = Path(__file__).resolve().parents[2]
_FAST_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
#: Objects in the source: enough that the transfer task, copying one at a time, is still running when killed.
_OBJECTS = 200
_KILL_AFTER = 20


def _source(lakefs_env: Environment, src: LakeFSClient, repo: str, objects: int) -> tuple[str, dict[str, bytes]]:
    """A region-a repository whose main holds ``objects`` objects put through its S3 gateway; returns its head."""
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    s3 = lakefs_env.region("region-a").s3_gateway_client()
    data = {f"events/part-{i:04}.json": content(f"{repo}/{i}", 200 + i % 50) for i in range(objects)}
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda kv: s3.put_object(Bucket=repo, Key=f"main/{kv[0]}", Body=kv[1]), data.items()))
    return src.commit(repo, "main", f"{objects} objects").id, data


def _cluster_config(
    config_path: Callable[[str], Path], tmp_path: Path, cluster: StandaloneCluster, **transfer: Any
) -> Path:
    """region-b's config with its ``spark`` section on the cluster: every batch big enough for Spark, event logs
    (uncompressed, to be searched) in ``tmp_path/events``, and executors told where this package is."""
    raw = yaml.safe_load(config_path("region-b").read_text())
    raw["source_stores"] = {"region-a": yaml.safe_load(config_path("region-a").read_text())["blockstore"]}
    raw["transfer"] = {**raw.get("transfer", {}), **transfer}
    (tmp_path / "events").mkdir()
    raw["spark"] = {
        "master": cluster.master_url,
        "transfer_threshold_objects": 10,
        "validation_threshold_ranges": 1,
        "conf": {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.port": str(free_port()),
            "spark.executor.memory": "512m",
            # JVMs that start fast on a busy machine (the test's choice; nothing here needs peak speed).
            "spark.driver.extraJavaOptions": _FAST_JVM,
            "spark.executor.extraJavaOptions": _FAST_JVM,
            "spark.executorEnv.PYTHONPATH": str(_CHECKOUT),
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": (tmp_path / "events").as_uri(),
            "spark.eventLog.compress": "false",
        },
    }
    path = tmp_path / "replication-cluster.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _start_driver(config: Path, mirror: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLICATION_", "LAKEFS_MIRROR_FAILPOINT"))}
    env["PYTHONPATH"] = os.pathsep.join([str(_CHECKOUT), env.get("PYTHONPATH", "")])
    with open(tmp_path / "driver.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.spark.cluster_driver", str(config), mirror, str(tmp_path / "report.json")],
            cwd=_CHECKOUT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _finish_driver(driver: subprocess.Popen[bytes], tmp_path: Path) -> dict[str, Any]:
    try:
        driver.wait(timeout=240)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=10)
    output = (tmp_path / "driver.log").read_text(errors="replace")
    assert driver.returncode == 0, output[-4000:]
    report: dict[str, Any] = json.loads((tmp_path / "report.json").read_text())
    report["output"] = output
    return report


def _event_log(tmp_path: Path, app_id: str) -> list[Path]:
    """The application's event log files (Spark 4 rolls them: ``eventlog_v2_<app>/events_<n>_<app>``)."""
    files = sorted(p for p in (tmp_path / "events").rglob(f"*{app_id}*") if p.is_file())
    assert files and not any(p.name.endswith(".inprogress") for p in files), "the driver stopped: the log is complete"
    return files


def _events(tmp_path: Path, app_id: str) -> list[dict[str, Any]]:
    logs = [p for p in _event_log(tmp_path, app_id) if p.name.startswith(("events_", app_id))]
    return [json.loads(line) for p in logs for line in p.read_text().splitlines()]


def _tasks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["Event"] == "SparkListenerTaskEnd"]


def _secrets(lakefs_env: Environment, config: Path) -> dict[str, str]:
    """Label -> value of every secret the driver's config holds, and of every region and MinIO server."""
    found = {f"lakeFS secret key of {n}": r.secret_access_key for n, r in lakefs_env.regions.items()}
    found.update({f"MinIO secret key of {n}": m.secret_key for n, m in lakefs_env.minio.items()})

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, str) and any(w in path.lower() for w in ("secret", "password")):
            found[f"config {path}"] = node

    walk(yaml.safe_load(config.read_text()), "config")
    return {label: value for label, value in found.items() if len(value) >= 8}


def _executors(report: dict[str, Any]) -> dict[str, int]:
    """Executor id -> tasks it completed, for the cluster's executors (never the driver)."""
    return {e["id"]: e["completedTasks"] for e in report["executors"] if e["id"] != "driver"}


@dataclass
class ClusterSync:
    """One sync of a fresh mirror on the cluster, a Python worker killed during its transfer task."""

    repo: str
    name: str
    head: str
    data: dict[str, bytes]
    config: Path
    tmp_path: Path
    report: dict[str, Any]
    killed: list[int]
    arrived_at_kill: int
    mirror_head_at_kill: str | None


def _branch_head(client: LakeFSClient, repo: str, branch: str) -> str | None:
    try:
        return {b.id: b.commit_id for b in client.list_branches(repo)}.get(branch)
    except LakeFSNotFound:  # the mirror repository not created yet
        return None


@pytest.fixture(scope="module")
def cluster_sync(
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    config_path: Callable[[str], Path],
    spark_cluster: StandaloneCluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ClusterSync]:
    tmp_path = tmp_path_factory.mktemp("cluster-sync")
    repo, name = f"clusterrepo-{uuid.uuid4().hex[:10]}", f"clustermirror-{uuid.uuid4().hex[:10]}"
    head, data = _source(lakefs_env, client_for("region-a"), repo, _OBJECTS)
    source_service = ReplicationService(load_config(config_path("region-a"), env={}))
    try:
        mirror = source_service.create_mirror(
            source_repository=repo,
            name=name,
            region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(name),
        )
    finally:
        source_service.close()
    # One copy at a time, so that the transfer task is still running when its Python worker is killed.
    config = _cluster_config(config_path, tmp_path, spark_cluster, concurrency=1)
    destination = ReplicationService(load_config(config, env={}))
    store = destination.destination_store(mirror.storage_id)

    def arrived() -> int:
        return sum(1 for _ in store.list_prefix(join_namespace(mirror.storage_namespace, "data/")))

    driver = _start_driver(config, name, tmp_path)
    killed: list[int] = []
    arrived_at_kill, mirror_head_at_kill = 0, None
    deadline = time.monotonic() + 240
    try:
        for _ in range(20_000):  # until some objects arrived: kill the Python worker copying them (like an OOM kill)
            if driver.poll() is not None or time.monotonic() > deadline:
                break
            arrived_at_kill = arrived()
            if _KILL_AFTER <= arrived_at_kill < len(data):
                killed = spark_cluster.python_task_workers()
                for pid in killed:
                    os.kill(pid, signal.SIGKILL)
                mirror_head_at_kill = _branch_head(client_for("region-b"), name, "main")
                break
            time.sleep(0.02)
        report = _finish_driver(driver, tmp_path)
    finally:
        destination.close()
        if driver.poll() is None:  # the watch failed: the driver must not outlive the fixture
            driver.kill()
            driver.wait(timeout=10)
    yield ClusterSync(repo, name, head, data, config, tmp_path, report, killed, arrived_at_kill, mirror_head_at_kill)


def test_a_sync_on_the_cluster_mirrors_the_source_with_transfer_and_validation_on_its_executors(
    cluster_sync: ClusterSync,
    client_for: Callable[[str], LakeFSClient],
    service_for: Callable[[str], ReplicationService],
    spark_cluster: StandaloneCluster,
) -> None:
    run, report = cluster_sync, cluster_sync.report
    [result] = report["results"]
    assert result["ok"], result
    [main] = [r for r in result["refs"] if r["name"] == "main"]
    assert (main["action"], main["mirror_commit"]) == ("created", run.head), result
    assert main["stats"]["transfer_path"] == "spark"
    assert report["transfer_choices"] == {"spark": 1} and report["validation_paths"] == ["spark"]
    assert_ref_complete(service_for("region-b"), run.name, run.head)
    assert_mirror_equals_source(client_for("region-a"), run.repo, client_for("region-b"), run.name)
    dst = client_for("region-b")
    assert {key: dst.get_object(run.name, "main", key) for key in run.data} == run.data

    # The tasks ran in the cluster's executors, one per worker: the transfer and the validation job each had
    # a successful task there. The master lists the application as finished.
    executors = _executors(report)
    assert len(executors) == 2 and sum(executors.values()) >= 2, report["executors"]
    tasks = _tasks(_events(run.tmp_path, report["app_id"]))
    done = [t for t in tasks if t["Task End Reason"]["Reason"] == "Success"]
    assert len({t["Stage ID"] for t in done}) == 2 and {t["Task Info"]["Executor ID"] for t in done} <= set(executors)
    assert spark_cluster.completed_application(report["app_id"])["state"] == "FINISHED"


def test_a_python_worker_killed_mid_transfer_is_retried_and_nothing_partial_is_promoted(
    cluster_sync: ClusterSync,
) -> None:
    run = cluster_sync
    assert len(run.killed) == 1, f"one Python worker was copying when {run.arrived_at_kill} objects had arrived"
    assert run.mirror_head_at_kill is None  # nothing promoted while the transfer was incomplete

    # Spark ran the task again (on a new Python worker) and the same sync succeeded; the retry did not copy
    # again what the killed attempt had written.
    tasks = _tasks(_events(run.tmp_path, run.report["app_id"]))
    failed = [t for t in tasks if t["Task End Reason"]["Reason"] != "Success"]
    assert len(failed) == 1, failed
    assert "Python worker exited unexpectedly" in json.dumps(failed[0]["Task End Reason"])
    retried = [t for t in tasks if t["Stage ID"] == failed[0]["Stage ID"] and t["Task Info"]["Attempt"] == 1]
    assert [t["Task End Reason"]["Reason"] for t in retried] == ["Success"]
    [result] = run.report["results"]
    [main] = [r for r in result["refs"] if r["name"] == "main"]
    assert (main["action"], main["mirror_commit"]) == ("created", run.head)
    stats = main["stats"]
    assert stats["objects_copied"] + stats["objects_skipped"] == len(run.data)
    assert stats["objects_skipped"] >= run.arrived_at_kill


def test_no_secret_reaches_the_event_log_the_ui_environment_page_or_the_cluster_logs(
    cluster_sync: ClusterSync, lakefs_env: Environment, spark_cluster: StandaloneCluster
) -> None:
    run, report = cluster_sync, cluster_sync.report
    events = _events(run.tmp_path, report["app_id"])
    assert any(e["Event"] == "SparkListenerEnvironmentUpdate" for e in events)
    places = {
        "the Spark event log": "\n".join(
            p.read_text(errors="replace") for p in _event_log(run.tmp_path, report["app_id"])
        ),
        "the driver UI's environment page": json.dumps(report["environment"]),
        "the cluster's logs": spark_cluster.logs_text(),
        "the driver's output": report["output"],
    }
    assert "spark.executorEnv.PYTHONPATH" in places["the driver UI's environment page"]  # the page was read
    secrets = _secrets(lakefs_env, run.config)
    assert len(secrets) >= 4
    leaks = [f"{label} in {where}" for where, text in places.items() for label, s in secrets.items() if s in text]
    assert not leaks
