"""A Spark standalone cluster for tests: a master and workers started from the pyspark distribution in the venv.

Each daemon is its own JVM (``bin/spark-class``), bound to 127.0.0.1 on free ports, logging to a file and
working in a directory under ``base_dir``. The workers start without the test's ``PYTHONPATH``, so executors
import this package only if the application's config says where it is (``spark.executorEnv.PYTHONPATH``), as
on a real cluster. Stopping ends every process started here, workers (and their executors) first.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakefs_mirror_devenv.processes import DevenvError, free_port, start_process, stop_pid, wait_http_ok

__all__ = ["StandaloneCluster", "spark_home", "start_standalone_cluster"]

#: Daemons need little heap; a JIT that stops early and the serial GC start them faster on a busy machine.
_DAEMON_ENV = {
    "SPARK_DAEMON_MEMORY": "256m",
    "SPARK_DAEMON_JAVA_OPTS": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}
#: No REST submission server (it would bind a fixed port, 6066) and no application directories kept around.
_DAEMON_PROPERTIES = "spark.master.rest.enabled false\nspark.worker.cleanup.enabled false\n"


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark wheel (``bin/spark-class``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class StandaloneCluster:
    """A running master and its workers. ``master_url`` is what ``spark.master`` names; ``web_ui`` the master's UI."""

    master_url: str
    web_ui: str
    base_dir: Path
    worker_dirs: list[Path]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        """The master's ``/json/`` page: workers, active and completed applications."""
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=10) as resp:
            return dict(json.load(resp))

    def alive_workers(self) -> int:
        return sum(w.get("state") == "ALIVE" for w in self.state().get("workers", []))

    def completed_application(self, app_id: str, *, timeout_s: float = 30.0) -> dict[str, Any]:
        """The master's record of a finished application (it moves there once the driver has stopped)."""
        deadline = time.monotonic() + timeout_s
        for _ in range(int(timeout_s / 0.25) + 1):
            for app in self.state().get("completedapps", []):
                if app.get("id") == app_id:
                    return dict(app)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        raise AssertionError(f"the master lists no completed application {app_id} after {timeout_s:.0f}s")

    def python_task_workers(self) -> list[int]:
        """Pids of the Python workers running tasks now: the processes each executor's ``pyspark.daemon`` forked."""
        parents: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                parents.setdefault(ppid, []).append(int(stat.parent.name))
        daemons: list[int] = []
        todo = [p.pid for p in self.processes[1:]]  # the workers; executors and their Python are below them
        for _ in range(10_000):
            if not todo:
                break
            pid = todo.pop()
            if b"pyspark.daemon" in _cmdline(pid):
                daemons.append(pid)
            else:
                todo.extend(parents.get(pid, []))
        return [child for pid in daemons for child in parents.get(pid, [])]

    def logs_text(self) -> str:
        """Every file the daemons and executors wrote (daemon logs, executors' stdout and stderr)."""
        return "\n".join(
            path.read_text(errors="replace") for path in sorted(self.base_dir.rglob("*")) if path.is_file()
        )

    def stop(self) -> None:
        """Workers (whose executors die with them) first, then the master; SIGKILL for any that hang."""
        for proc in reversed(self.processes):
            stop_pid(proc.pid, timeout_s=20)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def start_standalone_cluster(
    base_dir: Path, *, workers: int = 2, worker_memory: str = "768m", timeout_s: float = 240.0
) -> StandaloneCluster:
    """Start a master and ``workers`` workers of one core each; return once all of them registered.

    The wait is bounded by ``timeout_s`` (JVMs start slowly on a busy 2-core machine) and fails at once,
    quoting the log, if a daemon exits. On any failure everything started is stopped again.
    """
    home = spark_home()
    properties = base_dir / "spark-daemons.conf"
    properties.write_text(_DAEMON_PROPERTIES)
    env = {**_DAEMON_ENV, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": ""}
    port, ui_port = free_port(), free_port()
    cluster = StandaloneCluster(
        master_url=f"spark://127.0.0.1:{port}",
        web_ui=f"http://127.0.0.1:{ui_port}",
        base_dir=base_dir,
        worker_dirs=[base_dir / f"worker-{i}" for i in range(workers)],
    )
    daemon = [str(home / "bin" / "spark-class")]
    common = ["--host", "127.0.0.1", "--properties-file", str(properties)]
    started = time.monotonic()
    try:
        master_log = base_dir / "master.log"
        argv = [*daemon, "org.apache.spark.deploy.master.Master", *common, "--port", str(port)]
        master = start_process(
            [*argv, "--webui-port", str(ui_port)],
            log_path=master_log,
            env=env,
        )
        cluster.processes.append(master)
        wait_http_ok(f"{cluster.web_ui}/json/", timeout_s=timeout_s, process=master, log_path=master_log)
        for i, work_dir in enumerate(cluster.worker_dirs):
            work_dir.mkdir(parents=True)
            argv = [*daemon, "org.apache.spark.deploy.worker.Worker", *common]
            argv += ["--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "1"]
            argv += ["--memory", worker_memory, "--work-dir", str(work_dir), cluster.master_url]
            cluster.processes.append(start_process(argv, log_path=base_dir / f"worker-{i}.log", env=env))
        _wait_for_workers(cluster, workers, deadline=started + timeout_s)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _wait_for_workers(cluster: StandaloneCluster, expected: int, *, deadline: float) -> None:
    alive = 0
    for _ in range(int((deadline - time.monotonic()) / 0.25) + 2):
        dead = [p for p in cluster.processes if p.poll() is not None]
        if dead:
            raise DevenvError(f"a Spark daemon exited with code {dead[0].returncode}; logs in {cluster.base_dir}")
        alive = cluster.alive_workers()
        if alive == expected or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
    if alive != expected:
        raise DevenvError(f"{alive} of {expected} Spark workers registered in time; logs in {cluster.base_dir}")
