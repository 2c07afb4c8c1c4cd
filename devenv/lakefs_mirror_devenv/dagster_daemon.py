"""A real Dagster daemon for tests and benchmarks.

``dagster-daemon run -w workspace.yaml`` on a throwaway ``DAGSTER_HOME`` whose ``dagster.yaml`` sets the run
queue (``QueuedRunCoordinator``: ``max_concurrent_runs``, ``dequeue_interval_seconds``); runs are launched the
default way, each in its own subprocess. The daemon and its children are one process group, stopped whatever
happens. What it did is read back by ``dagster_audit.py``; ``dagster_convergence.py`` runs it until a mirror
caught up with its source.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .processes import DevenvError, pid_alive, start_process, stop_pid

if TYPE_CHECKING:
    import dagster as dg

__all__ = ["dagster_daemon", "wait_runs_finished", "write_instance_config"]


def write_instance_config(
    home: Path,
    *,
    max_concurrent_runs: int | None = None,
    dequeue_interval_seconds: int | None = None,
    sensor_workers: int | None = None,
    fork_runs: bool = False,
    recover_dead_runs: bool = False,
) -> Path:
    """``home/dagster.yaml``: telemetry off and, when either is given, the run queue's settings (with
    ``max_concurrent_runs``, as many dequeue threads: launches in parallel); with ``sensor_workers``, the sensor
    daemon evaluates sensors on that many threads and submits a tick's runs on as many; with ``fork_runs``,
    runs start as forks of a warm process (``orchestration/launcher.py``), not new interpreters; with
    ``recover_dead_runs``, README's run monitoring and run retries: a run whose worker died is failed within
    seconds and run again, a run whose step failed (a blocked branch) is not."""
    home.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"telemetry": {"enabled": False}}
    queue: dict[str, int | bool] = {}
    if max_concurrent_runs is not None:
        # Launch in threads too: each launch waits until its run worker has started (imports, definitions),
        # so one launch at a time lets short runs finish before the next starts and few ever overlap. A launch
        # the code server did not answer in time goes back to the queue: a failed run would keep its run key,
        # and the commit sensor never requests the same key twice.
        queue.update(
            max_concurrent_runs=max_concurrent_runs,
            dequeue_use_threads=True,
            dequeue_num_workers=max_concurrent_runs,
            max_user_code_failure_retries=3,
            user_code_failure_retry_delay=10,
        )
    if dequeue_interval_seconds is not None:
        queue["dequeue_interval_seconds"] = dequeue_interval_seconds
    if queue:
        config["run_coordinator"] = {
            "module": "dagster._core.run_coordinator",
            "class": "QueuedRunCoordinator",
            "config": queue,
        }
    if sensor_workers:
        # A tick's runs are created one after another without submit workers (each asks the code server for
        # the run's plan); without threads, one sensor's tick (hooks.sensor_wait) holds up every other sensor.
        config["sensors"] = {"use_threads": True, "num_workers": sensor_workers, "num_submit_workers": sensor_workers}
    if fork_runs:
        from lakefs_mirror_dagster.orchestration.launcher import FORK_RUN_LAUNCHER

        config["run_launcher"] = dict(FORK_RUN_LAUNCHER)
    if recover_dead_runs:
        config["run_monitoring"] = {"enabled": True, "poll_interval_seconds": 2}
        config["run_retries"] = {"enabled": True, "max_retries": 2, "retry_on_asset_or_op_failure": False}
    path = home / "dagster.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@contextmanager
def dagster_daemon(
    home: Path,
    *,
    workspace: Path,
    replication_config: Path,
    log_path: Path,
    stop_timeout_s: float = 30.0,
    env: Mapping[str, str] | None = None,
) -> Iterator[Callable[[], bool]]:
    """The daemon on ``home`` (write its ``dagster.yaml`` first) loading ``workspace`` with the region's
    replication config (and ``env`` added to its environment, which its run workers inherit); yields a callable
    telling whether it is still alive. Stopped (with the run workers it started) on exit."""
    argv = [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(workspace)]
    variables = {
        "DAGSTER_HOME": str(home),
        "LAKEFS_MIRROR_CONFIG": str(replication_config),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        **(env or {}),
    }
    process = start_process(argv, log_path=log_path, env=variables, cwd=workspace.parent)
    try:
        yield lambda: process.poll() is None
    finally:
        stop_pid(process.pid, timeout_s=stop_timeout_s)
        if pid_alive(process.pid):
            raise DevenvError(f"dagster-daemon (pid {process.pid}) did not stop")


def _unfinished() -> list[dg.DagsterRunStatus]:
    import dagster as dg

    return [
        dg.DagsterRunStatus.QUEUED,
        dg.DagsterRunStatus.NOT_STARTED,
        dg.DagsterRunStatus.STARTING,
        dg.DagsterRunStatus.STARTED,
        dg.DagsterRunStatus.CANCELING,
    ]


def wait_runs_finished(instance: dg.DagsterInstance, *, timeout_s: float, poll_s: float = 1.0) -> bool:
    """Wait until no run of ``instance`` is queued or in flight; False if some still are after ``timeout_s``."""
    import dagster as dg

    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / poll_s) + 2):
        if not instance.get_run_records(filters=dg.RunsFilter(statuses=_unfinished()), limit=1):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    return False
