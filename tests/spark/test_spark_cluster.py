"""Spark transfer and validation on a real standalone cluster (``spark.master: spark://127.0.0.1:PORT``).

The source is written as users write it (boto3 through region-a's S3 gateway); the driver is a process of its
own (``cluster_driver.py``) whose config names the cluster, and whose executors are separate JVMs started by
the cluster's workers, importing this package through ``spark.executorEnv.PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.replication import ReplicationService
from lakefs_mirror_dagster.storage import join_namespace
from tests.replication.conftest import assert_mirror_equals_source, assert_ref_complete, content

from .cluster import StandaloneCluster

pytestmark = pytest.mark.integration

_CHECKOUT = Path(__file__).resolve().parents[2]


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


@pytest.mark.timeout(420)
def test_transfer_and_validation_run_on_the_cluster_and_leave_no_secret_in_its_logs(
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    service_for: Callable[[str], ReplicationService],
    config_path: Callable[[str], Path],
    spark_cluster: StandaloneCluster,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    src = client_for("region-a")
    repo, name = unique_name("clusterrepo"), unique_name("clustermirror")
    head, data = _source(lakefs_env, src, repo, 60)
    service_for("region-a").create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    config = _cluster_config(config_path, tmp_path, spark_cluster)

    report = _finish_driver(_start_driver(config, name, tmp_path), tmp_path)

    [result] = report["results"]
    [main] = [r for r in result["refs"] if r["name"] == "main"]
    assert (main["action"], main["mirror_commit"]) == ("created", head), result
    assert main["stats"]["transfer_path"] == "spark" and main["stats"]["objects_copied"] == len(data)
    assert report["transfer_choices"] == {"spark": 1} and report["validation_paths"] == ["spark"]
    assert_ref_complete(service_for("region-b"), name, head)
    assert_mirror_equals_source(src, repo, client_for("region-b"), name)
    dst = client_for("region-b")
    assert {key: dst.get_object(name, "main", key) for key in data} == data

    # The tasks ran in the cluster's executors: one per worker registered, and the transfer and validation
    # tasks are theirs. The master lists the application as finished.
    executors = _executors(report)
    assert len(executors) == 2 and sum(executors.values()) >= 2, report["executors"]
    tasks = _tasks(_events(tmp_path, report["app_id"]))
    assert len(tasks) >= 2 and {t["Task Info"]["Executor ID"] for t in tasks} <= set(executors)
    assert spark_cluster.completed_application(report["app_id"])["state"] == "FINISHED"

    # No secret of the config in the event log, on the driver UI's environment page, in the executors' and
    # daemons' logs, or in the driver's output.
    events = _events(tmp_path, report["app_id"])
    assert any(e["Event"] == "SparkListenerEnvironmentUpdate" for e in events)
    places = {
        "the Spark event log": "\n".join(p.read_text(errors="replace") for p in _event_log(tmp_path, report["app_id"])),
        "the driver UI's environment page": json.dumps(report["environment"]),
        "the cluster's logs": spark_cluster.logs_text(),
        "the driver's output": report["output"],
    }
    assert "spark.executorEnv.PYTHONPATH" in places["the driver UI's environment page"]  # the page was read
    secrets = _secrets(lakefs_env, config)
    assert len(secrets) >= 4
    leaks = [f"{label} in {where}" for where, text in places.items() for label, s in secrets.items() if s in text]
    assert not leaks


@pytest.mark.timeout(420)
def test_a_python_worker_killed_mid_task_is_retried_and_the_sync_still_completes(
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    service_for: Callable[[str], ReplicationService],
    config_path: Callable[[str], Path],
    spark_cluster: StandaloneCluster,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    src = client_for("region-a")
    repo, name = unique_name("retryrepo"), unique_name("retrymirror")
    head, data = _source(lakefs_env, src, repo, 300)
    mirror = service_for("region-a").create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    # One copy at a time, so that the transfer task is still running when it is killed.
    config = _cluster_config(config_path, tmp_path, spark_cluster, concurrency=1)
    store = service_for("region-b").destination_store(mirror.storage_id)

    def arrived() -> int:
        return sum(1 for _ in store.list_prefix(join_namespace(mirror.storage_namespace, "data/")))

    driver = _start_driver(config, name, tmp_path)
    killed: list[int] = []
    before_kill = 0
    deadline = time.monotonic() + 180
    for _ in range(20_000):  # until some objects arrived: kill the Python worker copying them (like an OOM kill)
        if driver.poll() is not None or time.monotonic() > deadline:
            break
        before_kill = arrived()
        if 20 <= before_kill < len(data):
            killed = spark_cluster.python_task_workers()
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    report = _finish_driver(driver, tmp_path)
    assert len(killed) == 1, f"one Python worker was copying when {before_kill} objects had arrived: {killed}"

    # Spark ran the task again (on a new Python worker) and the sync succeeded: the mirror is complete, and the
    # retry did not copy again what the killed attempt had written.
    tasks = _tasks(_events(tmp_path, report["app_id"]))
    failed = [t for t in tasks if t["Task End Reason"]["Reason"] != "Success"]
    assert len(failed) == 1, failed
    assert "Python worker exited unexpectedly" in json.dumps(failed[0]["Task End Reason"])
    retried = [t for t in tasks if t["Stage ID"] == failed[0]["Stage ID"] and t["Task Info"]["Attempt"] == 1]
    assert [t["Task End Reason"]["Reason"] for t in retried] == ["Success"]
    [result] = report["results"]
    assert result["ok"], result
    [main] = [r for r in result["refs"] if r["name"] == "main"]
    assert (main["action"], main["mirror_commit"]) == ("created", head)
    stats = main["stats"]
    assert stats["objects_copied"] + stats["objects_skipped"] == len(data)
    assert stats["objects_skipped"] >= before_kill
    assert arrived() == len(data)
    assert_ref_complete(service_for("region-b"), name, head)
    assert_mirror_equals_source(src, repo, client_for("region-b"), name)
