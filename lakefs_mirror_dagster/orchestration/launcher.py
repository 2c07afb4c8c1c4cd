"""``ForkRunLauncher``: each run worker is a fork of a process that has already imported Dagster and this package.

Dagster's default launcher starts every run in a new interpreter that imports Dagster and the code location
first: seconds of CPU per run, most of a short run's time. This one forks each worker from one warm fork server
per launching process, and answers run monitoring so a worker that died silently does not hold its slot and run
key for ever. Fit for one host where the daemon loads the workspace itself (``dagster dev``,
``dagster-daemon run -w``).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import dagster as dg
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, RunLauncher, WorkerStatus
from dagster._serdes import ConfigurableClass, ConfigurableClassData

__all__ = [
    "DEFAULT_PRELOAD",
    "FORK_RUN_LAUNCHER",
    "RUN_WORKER_PID_TAG",
    "RUN_WORKER_START_TAG",
    "ForkRunLauncher",
    "process_start",
    "run_worker",
]

#: Imported once in the fork server: Dagster's run execution, this module (the workers' entry point), the code
#: location with what its ``build_definitions`` imports late (none of them does I/O at import), and
#: ``fork_warmup``, which parses botocore's S3 models for every run to come, and ``lakefs_sdk``, which a run's first
#: lakeFS client imports (seconds: the largest part of a run's set-up before it was preloaded).
DEFAULT_PRELOAD = (
    "dagster",
    "dagster._cli.api",
    __name__,
    "lakefs_mirror_dagster.orchestration.definitions",
    "lakefs_mirror_dagster.orchestration.mirroring.definitions",
    "lakefs_mirror_dagster.orchestration.gc_deletions",
    "lakefs_mirror_dagster.orchestration.refs_migration",
    "lakefs_mirror_dagster.orchestration.scrub",
    "lakefs_mirror_dagster.orchestration.fork_warmup",
    "lakefs_sdk",
)
RUN_WORKER_PID_TAG = "lakefs_mirror/run_worker_pid"
#: When the worker process started (``process_start``): a pid the system gave to another process since is not it.
RUN_WORKER_START_TAG = "lakefs_mirror/run_worker_start"
#: ``dagster.yaml``'s ``run_launcher`` section that selects this launcher.
FORK_RUN_LAUNCHER = {"module": __name__, "class": "ForkRunLauncher"}


def run_worker(instance_ref: str, run_id: str) -> None:
    """A run worker's body (in the forked process): execute ``run_id`` as ``dagster api execute_run`` does."""
    from dagster._cli.api import _execute_run_command_body
    from dagster._core.instance.ref import InstanceRef
    from dagster._utils.interrupts import capture_interrupts

    ref = dg.deserialize_value(instance_ref, InstanceRef)
    with capture_interrupts(), dg.DagsterInstance.from_ref(ref) as instance:
        pid = os.getpid()
        instance.add_run_tags(run_id, {RUN_WORKER_PID_TAG: str(pid), RUN_WORKER_START_TAG: process_start(pid) or ""})
        _execute_run_command_body(run_id, instance, lambda _event: None, set_exit_code_on_failure=False)


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux ``/proc``), or None when it is gone, a
    zombie, or the system has no ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ... starttime": comm may hold spaces and parentheses, so count after the last ")"
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def _worker_alive(pid: int, start: str) -> bool:
    """Whether the worker that recorded (``pid``, ``start``) still runs."""
    if Path("/proc/self/stat").exists():
        return process_start(pid) == start if start else process_start(pid) is not None
    try:  # no /proc: the pid alone
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ForkRunLauncher(RunLauncher, ConfigurableClass):
    """Launches each run as a fork of a warm fork server.

    One ``multiprocessing`` fork server per launching process (the daemon), started once with ``preload_modules``
    imported; each worker executes its run as ``dagster api execute_run`` does (same events, same run storage).
    Set it in ``$DAGSTER_HOME/dagster.yaml``::

        run_launcher:
          module: lakefs_mirror_dagster.orchestration.launcher
          class: ForkRunLauncher

    Runs start on the launching process's host, with its Python, environment and working directory. Terminating a
    run sends its worker SIGINT (pid in the run's ``lakefs_mirror/run_worker_pid`` tag), which Dagster turns into
    a cancelled run. ``check_run_worker_health`` reports failed a worker whose process is gone or whose pid now
    names another process (start time in ``lakefs_mirror/run_worker_start``); the monitoring daemon fails the
    run and ``run_retries`` (``retry_on_asset_or_op_failure: false``) runs it again.
    """

    def __init__(self, inst_data: ConfigurableClassData | None = None, preload_modules: Sequence[str] = ()) -> None:
        self._inst_data = inst_data
        self._preload = list(preload_modules or DEFAULT_PRELOAD)
        self._context: Any = None
        self._workers: dict[str, multiprocessing.process.BaseProcess] = {}
        self._lock = threading.Lock()
        super().__init__()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"preload_modules": dg.Field([str], is_required=False)}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]) -> Self:
        return cls(inst_data=inst_data, preload_modules=config_value.get("preload_modules", ()))

    def _fork_context(self) -> Any:
        """The fork server's context, its preload set on first use (the server itself starts on the first fork)."""
        if self._context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(self._preload)
            self._context = context
        return self._context

    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        ref = dg.serialize_value(self._instance.get_ref())
        with self._lock:
            for run_id in [r for r, w in self._workers.items() if not w.is_alive()]:
                self._workers.pop(run_id).join(0)
            worker = self._fork_context().Process(target=run_worker, args=(ref, run.run_id), name=f"run-{run.run_id}")
            worker.start()
            self._workers[run.run_id] = worker

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        pid = run.tags.get(RUN_WORKER_PID_TAG) if run is not None else None
        if run is None or run.is_finished or pid is None:
            return False
        self._instance.report_run_canceling(run)
        try:
            os.kill(int(pid), signal.SIGINT)
        except ProcessLookupError:
            return False
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        """RUNNING while the run's worker process lives, FAILED once it is gone (Dagster's run monitoring then
        fails the run); UNKNOWN before the worker has recorded its pid."""
        pid = run.tags.get(RUN_WORKER_PID_TAG)
        if pid is None:
            return CheckRunHealthResult(WorkerStatus.UNKNOWN, "the run worker has not recorded its pid yet")
        if _worker_alive(int(pid), run.tags.get(RUN_WORKER_START_TAG, "")):
            return CheckRunHealthResult(WorkerStatus.RUNNING, run_worker_id=pid)
        return CheckRunHealthResult(
            WorkerStatus.FAILED, f"run worker pid {pid} is gone (killed, or its host restarted)", run_worker_id=pid
        )

    def join(self, timeout: int = 30) -> None:
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.join(timeout)
