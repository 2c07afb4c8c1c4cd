"""What a Dagster daemon did for one mirror, read back from its instance.

``audit_runs`` reads the runs, sensor ticks and materializations of one mirror, so a caller can tell how many
runs there were, how many ran at once, and whether any was requested twice; ``run_marks`` and ``run_stages``
(``backfill_stages`` for a backfill's run) time the stages of one run from its record and event log.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dagster as dg

__all__ = [
    "BACKFILL_STAGES",
    "RUN_STAGES",
    "RunsAudit",
    "TickTimes",
    "audit_runs",
    "backfill_stages",
    "max_overlap",
    "run_marks",
    "run_stages",
    "sensor_ticks",
    "stage_table",
]

RUN_KEY_TAG = "dagster/run_key"  # dagster._core.storage.tags.RUN_KEY_TAG
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
