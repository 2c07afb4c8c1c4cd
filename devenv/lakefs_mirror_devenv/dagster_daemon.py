"""A real Dagster daemon for tests and benchmarks, and what it did, read back from its instance.

``dagster-daemon run -w workspace.yaml`` on a throwaway ``DAGSTER_HOME`` whose ``dagster.yaml`` sets the run
queue (``QueuedRunCoordinator``: ``max_concurrent_runs``, ``dequeue_interval_seconds``); runs are launched the
default way, each in its own subprocess. The daemon and its children are one process group, stopped whatever
happens. ``audit_runs`` reads the runs, sensor ticks and materializations of one mirror back, so a caller can
tell how many runs there were, how many ran at once, and whether any was requested twice. ``backfill_mirror``
mirrors every branch with one backfill launched as from the UI (``dagster_webserver.py``) instead of the sensor.
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .processes import DevenvError, pid_alive, start_process, stop_pid

if TYPE_CHECKING:
    import dagster as dg

    from lakefs_mirror_dagster.lakefs import LakeFSClient

__all__ = [
    "BACKFILL_STAGES",
    "BACKFILL_TAG",
    "RUN_STAGES",
    "BackfillOutcome",
    "Convergence",
    "RunsAudit",
    "TickTimes",
    "audit_runs",
    "backfill_mirror",
    "backfill_stages",
    "converge_mirror",
    "dagster_daemon",
    "max_overlap",
    "run_marks",
    "run_stages",
    "sensor_ticks",
    "stage_table",
    "wait_runs_finished",
    "write_instance_config",
]

RUN_KEY_TAG = "dagster/run_key"  # dagster._core.storage.tags.RUN_KEY_TAG
#: The tag every run a backfill creates carries, with the backfill's ID (dagster._core.storage.tags.BACKFILL_ID_TAG).
BACKFILL_TAG = "dagster/backfill"
#: The run worker's first engine event (Dagster's, whichever launcher started it), once its process is up.
PROCESS_STARTED = "Started process for run"
#: A branch run's stages, read from its record and event log: (name, from -> to).
RUN_STAGES = (
    ("queue", "run created -> RUN_STARTING (queued run coordinator dequeues it, the launch begins)"),
    ("process", "RUN_STARTING -> 'Started process' (the run worker starts: a new Python importing Dagster, or a fork)"),
    ("load", "'Started process' -> RUN_START (run worker loads the definitions)"),
    ("init", "RUN_START -> STEP_START (resources)"),
    ("prepare", "STEP_START -> 'sync started' log (service, mirror lookup, engine)"),
    ("sync", "'sync started' log -> ranges_validated check (plan, transfer, validation)"),
    ("promote", "check -> ASSET_MATERIALIZATION (commit records, ref move)"),
    ("finish", "materialization -> run success (teardown; after the mirror moved)"),
)

#: The stages of a backfill's one run, from its launch in the UI (``backfill_mirror``): (name, from -> to).
BACKFILL_STAGES = (
    ("pick-up", "launch -> run created (Dagster's backfill daemon looks at backfills every 30 s)"),
    ("queue", "run created -> RUN_STARTING (queued run coordinator)"),
    ("process", "RUN_STARTING -> RUN_START (run worker: a new Python, the definitions)"),
    ("step", "RUN_START -> STEP_START (the step's own process, resources)"),
    ("prepare", "STEP_START -> 'sync started' log (service, mirror lookup, engine)"),
    ("sync", "'sync started' log -> first ranges_validated check (every branch synced)"),
    ("record", "first check -> run success (a check, a log line and a materialization per branch)"),
    ("shown", "run end -> backfill shown complete (the backfill daemon's next look)"),
)


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


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals ``(start, end)`` open at one instant (an end before a start at the same time)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    best = now = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


@dataclass
class RunsAudit:
    """One mirror's runs under the daemon, its commit sensor's ticks and its branch materializations."""

    runs: int = 0
    succeeded: int = 0
    #: The most runs in flight (started, not yet ended) at one instant.
    max_parallel: int = 0
    #: Run keys that more than one run carries (the daemon should never create such runs).
    duplicate_run_keys: list[str] = field(default_factory=list)
    #: Runs per ``branch@source commit`` they were requested for (their tags), and those requested twice or more.
    requested: Counter[str] = field(default_factory=Counter)
    duplicate_requests: list[str] = field(default_factory=list)
    #: Asset checks the runs executed, by name (over all runs).
    checks: Counter[str] = field(default_factory=Counter)
    #: Sensor ticks, and the run requests they repeated while that run was queued or in flight (skipped by key).
    ticks: int = 0
    rerequested_in_flight: int = 0
    #: Materializations per branch partition, and the source commit each names.
    materialized: Counter[str] = field(default_factory=Counter)
    materialized_commits: dict[str, str] = field(default_factory=dict)
    first_created: float = 0.0
    last_created: float = 0.0
    last_ended: float = 0.0
    #: When the commit sensor's ticks started and how long each took (run creation included).
    tick_times: TickTimes = field(default_factory=lambda: TickTimes([], []))
    #: ``run_stages`` of each run that succeeded.
    stages: list[dict[str, float]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        """From the first run's creation to the last run's end."""
        return max(0.0, self.last_ended - self.first_created)

    @property
    def created_per_minute(self) -> float:
        """Runs the sensor daemon created per minute, from the first run's creation to the last's."""
        span = self.last_created - self.first_created
        return self.runs / span * 60 if span > 0 else math.nan


@dataclass
class TickTimes:
    """A sensor's ticks: when each started, and how long each took (evaluation and run creation)."""

    starts: list[float]
    durations: list[float]

    @classmethod
    def of(cls, ticks: list[Any]) -> TickTimes:
        """From ``sensor_ticks``' answer (a tick still running has no duration)."""
        return cls([t.timestamp for t in ticks], [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp])

    def summary(self) -> str:
        """``N ticks, every M s (median; max X s), each taking M s (median; max X s)``."""
        if not self.starts:
            return "no tick"
        gaps = [b - a for a, b in itertools.pairwise(sorted(self.starts))] or [math.nan]
        took = self.durations or [math.nan]
        return (
            f"{len(self.starts)} ticks, one every {statistics.median(gaps):.1f} s (median; max {max(gaps):.1f} s), "
            f"each taking {statistics.median(took):.1f} s (median; max {max(took):.1f} s)"
        )


def audit_runs(instance: dg.DagsterInstance, mirror: str, sensor_name: str) -> RunsAudit:
    """Read back ``mirror``'s runs (by their ``lakefs_mirror/mirror`` tag), the ticks of ``sensor_name`` and the
    mirror's branch materializations (``history.mirror_history``)."""
    import dagster as dg

    from lakefs_mirror_dagster.orchestration.history import MAX_LIMIT, mirror_history
    from lakefs_mirror_dagster.orchestration.mirroring import BRANCH_TAG, MIRROR_TAG, SOURCE_COMMIT_TAG

    audit = RunsAudit()
    records = instance.get_run_records(filters=dg.RunsFilter(tags={MIRROR_TAG: mirror}))
    audit.runs = len(records)
    audit.succeeded = sum(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in records)
    keys = Counter(r.dagster_run.tags.get(RUN_KEY_TAG, "") for r in records)
    audit.duplicate_run_keys = sorted(k for k, n in keys.items() if n > 1)
    audit.requested = Counter(
        f"{r.dagster_run.tags[BRANCH_TAG]}@{r.dagster_run.tags.get(SOURCE_COMMIT_TAG, '?')}"
        for r in records
        if BRANCH_TAG in r.dagster_run.tags
    )
    audit.duplicate_requests = sorted(k for k, n in audit.requested.items() if n > 1)
    audit.checks = Counter(key.name for r in records for key in r.dagster_run.asset_check_selection or ())
    now = time.time()
    audit.max_parallel = max_overlap([(r.start_time, r.end_time or now) for r in records if r.start_time])
    if records:
        audit.first_created = min(r.create_timestamp.timestamp() for r in records)
        audit.last_created = max(r.create_timestamp.timestamp() for r in records)
        audit.last_ended = max(r.end_time or now for r in records)
    # A run is open from its creation to its end: a tick asking for its key meanwhile must not get a new run.
    by_key = {r.dagster_run.tags.get(RUN_KEY_TAG, ""): r for r in records}
    ticks = sensor_ticks(instance, sensor_name)
    audit.tick_times = TickTimes.of(ticks)
    for record in records:
        stages = run_stages(record.create_timestamp.timestamp(), run_marks(instance, record.dagster_run.run_id))
        audit.stages += [stages] if stages is not None else []
    for tick in ticks:
        audit.ticks += 1
        for key in tick.run_keys:
            run = by_key.get(key)
            if run is None or run.dagster_run.run_id in tick.run_ids:
                continue  # not this mirror's, or the run this tick created
            closed = run.end_time or now
            audit.rerequested_in_flight += run.create_timestamp.timestamp() <= tick.timestamp <= closed
    for promotion in mirror_history(instance, mirror, limit=MAX_LIMIT):
        audit.materialized[promotion.branch] += 1
        audit.materialized_commits[promotion.branch] = promotion.source_commit_id
    return audit


def sensor_ticks(instance: dg.DagsterInstance, sensor_name: str) -> list[Any]:
    """Every stored tick of the sensor ``sensor_name`` (Dagster's ``InstigatorTick``: ``timestamp``,
    ``end_timestamp``, ``run_ids``, ``run_keys``)."""
    from dagster._core.scheduler.instigation import InstigatorType

    states = instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
    return [
        tick
        for state in states
        if state.instigator_name == sensor_name
        for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id)
    ]


def run_marks(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """First timestamp of each event type of a run, of its worker's 'Started process' engine event
    (``process``) and of the branch asset's ``SYNC_STARTED`` log line (``sync_started``)."""
    from lakefs_mirror_dagster.orchestration.mirroring import SYNC_STARTED

    marks: dict[str, float] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is not None:
            marks.setdefault(event.event_type.name, entry.timestamp)
            if PROCESS_STARTED in (event.message or ""):
                marks.setdefault("process", entry.timestamp)
        elif SYNC_STARTED in entry.user_message:
            marks.setdefault("sync_started", entry.timestamp)
    return marks


def run_stages(created: float, marks: dict[str, float]) -> dict[str, float] | None:
    """Seconds of each of ``RUN_STAGES`` for a run created at ``created``; None when a mark is missing (a run
    that failed, or is still in flight)."""
    need = ("RUN_STARTING", "process", "RUN_START", "STEP_START", "sync_started", "ASSET_CHECK_EVALUATION")
    if not all(k in marks for k in (*need, "ASSET_MATERIALIZATION", "RUN_SUCCESS")):
        return None
    return {
        "queue": marks["RUN_STARTING"] - created,
        "process": marks["process"] - marks["RUN_STARTING"],
        "load": marks["RUN_START"] - marks["process"],
        "init": marks["STEP_START"] - marks["RUN_START"],
        "prepare": marks["sync_started"] - marks["STEP_START"],
        "sync": marks["ASSET_CHECK_EVALUATION"] - marks["sync_started"],
        "promote": marks["ASSET_MATERIALIZATION"] - marks["ASSET_CHECK_EVALUATION"],
        "finish": marks["RUN_SUCCESS"] - marks["ASSET_MATERIALIZATION"],
    }


def stage_table(stages: list[dict[str, float]], names: tuple[tuple[str, str], ...] = RUN_STAGES) -> list[str]:
    """One line per stage: its median and max over ``stages`` and what it spans."""
    lines = []
    for name, what in names:
        values = [s[name] for s in stages if name in s]
        if values:
            lines.append(f"  {name:9} {statistics.median(values):6.2f}s {max(values):6.2f}s  {what}")
    return lines


@dataclass
class Convergence:
    """A mirror brought to its source's branch heads by the daemon alone."""

    converged: bool
    #: From the daemon's start until every mirror head equals its source head and no run is left in flight.
    seconds: float
    audit: RunsAudit
    #: Branches whose mirror head still differed from the source's at the end.
    lagging: list[str]


def converge_mirror(
    home: Path,
    *,
    workspace: Path,
    replication_config: Path,
    mirror: str,
    source: LakeFSClient,
    source_repository: str,
    destination: LakeFSClient,
    max_concurrent_runs: int,
    timeout_s: float,
    settle_s: float = 0.0,
    dequeue_interval_seconds: int = 1,
    sensor_workers: int | None = None,
    fork_runs: bool = False,
) -> Convergence:
    """Run the daemon on ``home`` (an active ``mirror`` in ``replication_config``'s mirrors database) until the
    mirror's branch heads equal the source's and no run is queued or in flight, then ``settle_s`` more (sensor
    ticks with nothing to do), and audit what it ran. The daemon's log is ``home/dagster-daemon.log``."""
    import dagster as dg

    from lakefs_mirror_dagster.orchestration.mirroring import commit_sensor_name

    write_instance_config(
        home,
        max_concurrent_runs=max_concurrent_runs,
        dequeue_interval_seconds=dequeue_interval_seconds,
        sensor_workers=sensor_workers,
        fork_runs=fork_runs,
    )
    lagging: list[str] = []
    converged = False
    started = time.monotonic()
    seconds = timeout_s
    with (
        dagster_daemon(
            home, workspace=workspace, replication_config=replication_config, log_path=home / "dagster-daemon.log"
        ) as alive,
        dg.DagsterInstance.from_config(str(home)) as instance,
    ):
        for _ in range(int(timeout_s) + 2):
            lagging = _lagging(source, source_repository, destination, mirror)
            if not lagging and wait_runs_finished(instance, timeout_s=0):
                converged, seconds = True, time.monotonic() - started
                break
            if not alive() or time.monotonic() - started > timeout_s:
                break
            time.sleep(1.0)
        time.sleep(settle_s if converged else 0.0)
        wait_runs_finished(instance, timeout_s=60.0)  # let a run in flight end before its daemon is stopped
        audit = audit_runs(instance, mirror, commit_sensor_name(mirror))
    return Convergence(converged, seconds, audit, lagging)


@dataclass
class BackfillOutcome:
    """A mirror brought to its source's branch heads by one UI backfill of every branch partition."""

    backfill_id: str
    #: The backfill's last status (``COMPLETED_SUCCESS`` when every partition was materialized).
    status: str
    #: From the launch until the backfill's last run ended (the mirror converged), and until Dagster showed the
    #: backfill done (its daemon looks at backfills every 30 s).
    run_seconds: float
    seconds: float
    #: The runs the backfill created, and every run the instance has (the backfill's and any other).
    backfill_runs: list[str]
    runs: int
    #: Ticks of the mirror's commit sensor (stopped before the daemon started: 0).
    sensor_ticks: int
    audit: RunsAudit
    lagging: list[str]
    #: The log messages of the backfill's runs, in order (the asset's own lines and the engine's progress).
    log_lines: list[str]
    #: Seconds of each of ``BACKFILL_STAGES`` when the backfill was one run that succeeded, else empty.
    stages: dict[str, float] = field(default_factory=dict)


def backfill_mirror(
    home: Path,
    *,
    workspace: Path,
    replication_config: Path,
    location: str,
    mirror: str,
    source: LakeFSClient,
    source_repository: str,
    destination: LakeFSClient,
    timeout_s: float,
    max_concurrent_runs: int = 4,
    fork_runs: bool = False,
) -> BackfillOutcome:
    """Mirror every branch of ``source_repository`` (the active ``mirror``) with one backfill launched as from the
    UI: a webserver on ``home`` stops the mirror's commit sensor (so only the backfill creates runs), the branch
    partitions are added, ``dagster-daemon`` starts, and once its backfill and run-queue daemons are up the
    webserver's ``launchPartitionBackfill`` asks for every partition of the branch-heads asset. Returns when
    the backfill is done (or ``timeout_s`` after the launch), with what it ran; ``fork_runs`` as in
    ``write_instance_config``. Logs: ``home/dagster-*.log``."""
    import dagster as dg

    from lakefs_mirror_dagster.orchestration.mirroring import (
        branch_partitions_name,
        commit_sensor_name,
        mirror_asset_key,
    )
    from lakefs_mirror_dagster.replication.heads import branch_heads

    from .dagster_webserver import (
        TERMINAL_BACKFILL_STATUSES,
        backfill_status,
        daemons_healthy,
        dagster_webserver,
        launch_asset_backfill,
        stop_sensor,
    )

    write_instance_config(
        home, max_concurrent_runs=max_concurrent_runs, dequeue_interval_seconds=1, fork_runs=fork_runs
    )
    branches = sorted(branch_heads(source, source_repository, page_size=1000))
    status, lagging = "", list(branches)
    with (
        dagster_webserver(
            home, workspace=workspace, replication_config=replication_config, log_path=home / "dagster-webserver.log"
        ) as url,
        dg.DagsterInstance.from_config(str(home)) as instance,
    ):
        stop_sensor(url, location, commit_sensor_name(mirror))
        instance.add_dynamic_partitions(branch_partitions_name(mirror), branches)
        with dagster_daemon(
            home, workspace=workspace, replication_config=replication_config, log_path=home / "dagster-daemon.log"
        ) as alive:
            for _ in range(120):  # bounded: the daemon loads the code location first
                if daemons_healthy(url) or not alive():
                    break
                time.sleep(1.0)
            launched_at, started = time.time(), time.monotonic()
            backfill_id = launch_asset_backfill(url, mirror_asset_key(mirror).path, branches, title=f"all of {mirror}")
            for _ in range(int(timeout_s) + 2):
                status = backfill_status(url, backfill_id)
                if status in TERMINAL_BACKFILL_STATUSES or not alive() or time.monotonic() - started > timeout_s:
                    break
                time.sleep(1.0)
            seconds, done_at = time.monotonic() - started, time.time()
            wait_runs_finished(instance, timeout_s=60.0)  # let a run in flight end before its daemon is stopped
        records = instance.get_run_records(filters=dg.RunsFilter(tags={BACKFILL_TAG: backfill_id}))
        ended = [r.end_time for r in records if r.end_time]
        log_lines = [
            entry.user_message
            for record in sorted(records, key=lambda r: r.create_timestamp)
            for entry in instance.all_logs(record.dagster_run.run_id)
            if entry.dagster_event is None
        ]
        lagging = _lagging(source, source_repository, destination, mirror)
        stages: dict[str, float] = {}
        if len(records) == 1 and records[0].end_time:
            marks = run_marks(instance, records[0].dagster_run.run_id)
            marks.update(launched=launched_at, created=records[0].create_timestamp.timestamp(), shown=done_at)
            stages = backfill_stages(marks, records[0].end_time) or {}
        return BackfillOutcome(
            backfill_id=backfill_id,
            status=status,
            run_seconds=max(ended) - launched_at if ended and len(ended) == len(records) else math.nan,
            seconds=seconds,
            backfill_runs=[r.dagster_run.run_id for r in records],
            runs=len(instance.get_run_records()),
            sensor_ticks=len(sensor_ticks(instance, commit_sensor_name(mirror))),
            audit=audit_runs(instance, mirror, commit_sensor_name(mirror)),
            lagging=lagging,
            log_lines=log_lines,
            stages=stages,
        )


def backfill_stages(marks: dict[str, float], ended: float) -> dict[str, float] | None:
    """Seconds of each of ``BACKFILL_STAGES`` from a run's ``run_marks`` plus ``launched``, ``created`` and
    ``shown`` (when the backfill was seen complete), and the run's end; None when a mark is missing."""
    need = ("launched", "created", "RUN_STARTING", "RUN_START", "STEP_START", "sync_started")
    if not all(k in marks for k in (*need, "ASSET_CHECK_EVALUATION", "RUN_SUCCESS", "shown")):
        return None
    return {
        "pick-up": marks["created"] - marks["launched"],
        "queue": marks["RUN_STARTING"] - marks["created"],
        "process": marks["RUN_START"] - marks["RUN_STARTING"],
        "step": marks["STEP_START"] - marks["RUN_START"],
        "prepare": marks["sync_started"] - marks["STEP_START"],
        "sync": marks["ASSET_CHECK_EVALUATION"] - marks["sync_started"],
        "record": marks["RUN_SUCCESS"] - marks["ASSET_CHECK_EVALUATION"],
        "shown": max(0.0, marks["shown"] - ended),
    }


def _lagging(source: LakeFSClient, repo: str, destination: LakeFSClient, mirror: str) -> list[str]:
    from lakefs_mirror_dagster.replication.heads import branch_heads

    src = branch_heads(source, repo, page_size=1000)
    dst = branch_heads(destination, mirror, page_size=1000, missing_ok=True)
    return sorted(name for name in set(src) | set(dst) if src.get(name) != dst.get(name))
