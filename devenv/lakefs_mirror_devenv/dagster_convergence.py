"""A mirror brought to its source's branch heads by a real Dagster daemon, and what it ran on the way.

``converge_mirror`` lets the mirror's commit sensor request the runs; ``backfill_mirror`` mirrors every branch
with one backfill launched as from the UI (``dagster_webserver.py``) instead of the sensor.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .dagster_audit import RunsAudit, audit_runs, backfill_stages, run_marks, sensor_ticks
from .dagster_daemon import dagster_daemon, wait_runs_finished, write_instance_config

if TYPE_CHECKING:
    from lakefs_mirror_dagster.lakefs import LakeFSClient

__all__ = ["BACKFILL_TAG", "BackfillOutcome", "Convergence", "backfill_mirror", "converge_mirror"]

#: The tag every run a backfill creates carries, with the backfill's ID (dagster._core.storage.tags.BACKFILL_ID_TAG).
BACKFILL_TAG = "dagster/backfill"


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


def _lagging(source: LakeFSClient, repo: str, destination: LakeFSClient, mirror: str) -> list[str]:
    from lakefs_mirror_dagster.replication.heads import branch_heads

    src = branch_heads(source, repo, page_size=1000)
    dst = branch_heads(destination, mirror, page_size=1000, missing_ok=True)
    return sorted(name for name in set(src) | set(dst) if src.get(name) != dst.get(name))
