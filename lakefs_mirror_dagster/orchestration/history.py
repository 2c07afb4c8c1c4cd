"""Mirror history and status, read back from Dagster's event log and the mirrors database.

Every ``branch_heads`` materialization is one move of one mirror branch (created, advanced, reset, deleted),
so the event log is the history of every mirror branch. Queries are bounded: ``fetch_materializations``
with a limit, newest first, never a scan of the whole log.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ..replication import ReplicationService
from .mirroring import mirror_asset_key

__all__ = ["BranchStatus", "MirrorStatus", "Promotion", "mirror_history", "stale", "status_report"]

MAX_LIMIT = 10_000


@dataclass(frozen=True)
class Promotion:
    """One recorded move of a mirror branch (``action`` as the engine names it: created, advanced, reset,
    unchanged or deleted)."""

    mirror: str
    branch: str
    action: str
    source_commit_id: str
    mirror_commit_id: str
    previous_mirror_commit_id: str
    commit_time: dt.datetime | None
    lag_seconds: float | None
    recorded_at: dt.datetime
    run_id: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mirror": self.mirror,
            "branch": self.branch,
            "action": self.action,
            "source_commit_id": self.source_commit_id,
            "mirror_commit_id": self.mirror_commit_id,
            "previous_mirror_commit_id": self.previous_mirror_commit_id,
            "commit_time": self.commit_time.isoformat() if self.commit_time else None,
            "lag_seconds": self.lag_seconds,
            "recorded_at": self.recorded_at.isoformat(),
            "run_id": self.run_id,
        }


def mirror_history(
    instance: dg.DagsterInstance, mirror: str, branch: str | None = None, *, limit: int = 50
) -> list[Promotion]:
    """The last ``limit`` moves of ``mirror``'s branches (or of ``branch`` only), newest first."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    records_filter = dg.AssetRecordsFilter(
        asset_key=mirror_asset_key(mirror), asset_partitions=[branch] if branch is not None else None
    )
    result = instance.fetch_materializations(records_filter, limit=limit, ascending=False)
    promotions = []
    for record in result.records:
        event = record.asset_materialization
        if event is None:
            continue
        promotions.append(_promotion(mirror, event, record.timestamp, record.run_id))
    return promotions


def _promotion(mirror: str, event: dg.AssetMaterialization, timestamp: float, run_id: str) -> Promotion:
    meta: dict[str, Any] = {k: v.value for k, v in event.metadata.items()}
    commit_time = meta.get("commit_time")
    lag = meta.get("lag_seconds")
    return Promotion(
        mirror=mirror,
        branch=event.partition or "",
        action=str(meta.get("action", "")),
        source_commit_id=str(meta.get("source_commit_id", "")),
        mirror_commit_id=str(meta.get("mirror_commit_id", "")),
        previous_mirror_commit_id=str(meta.get("previous_mirror_commit_id", "")),
        commit_time=dt.datetime.fromtimestamp(float(commit_time), dt.UTC) if commit_time is not None else None,
        lag_seconds=float(lag) if lag is not None else None,
        recorded_at=dt.datetime.fromtimestamp(timestamp, dt.UTC),
        run_id=run_id,
        metadata=meta,
    )


@dataclass(frozen=True)
class BranchStatus:
    """One mirror branch: the source head last seen, the mirror head, lag, and recent moves."""

    branch: str
    source_commit_id: str | None
    mirror_commit_id: str | None
    in_sync: bool
    lag_seconds: float | None
    promoted_at: dt.datetime | None
    recent: list[Promotion]
    #: How long the mirror has been missing the source head (0 in sync; None: that commit's time unknown).
    behind_seconds: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "source_commit_id": self.source_commit_id,
            "mirror_commit_id": self.mirror_commit_id,
            "in_sync": self.in_sync,
            "lag_seconds": self.lag_seconds,
            "behind_seconds": None if self.behind_seconds is None else round(self.behind_seconds, 3),
            "promoted_at": self.promoted_at.isoformat() if self.promoted_at else None,
            "recent": [p.as_dict() for p in self.recent],
        }


@dataclass(frozen=True)
class MirrorStatus:
    name: str
    source_region: str
    source_repository: str
    state: str
    message: str
    branches: list[BranchStatus]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source_region": self.source_region,
            "source_repository": self.source_repository,
            "state": self.state,
            "message": self.message,
            "branches": [b.as_dict() for b in self.branches],
        }


def status_report(
    instance: dg.DagsterInstance | None, service: ReplicationService, *, recent: int = 5, mirror: str | None = None
) -> list[MirrorStatus]:
    """Per mirror of this region (or just ``mirror``) and branch: heads, lag, last ``recent`` moves.

    Heads and lag come from the mirrors database (what the last sync recorded, no lakeFS call); the
    moves come from the event log (one bounded query per branch; none without ``instance``). Lag is the
    time from the source commit to its promotion; a branch that is behind shows the source head it is
    behind with ``in_sync`` False.
    """
    report = []
    now = dt.datetime.now(dt.UTC)
    for m in service.my_mirrors(name=mirror):
        branches = [
            BranchStatus(
                branch=b.branch,
                source_commit_id=b.source_commit_id,
                mirror_commit_id=b.mirrored_commit_id,
                in_sync=b.in_sync,
                lag_seconds=b.lag_seconds,
                promoted_at=b.promoted_at,
                recent=mirror_history(instance, m.name, b.branch, limit=recent) if instance and recent > 0 else [],
                behind_seconds=b.behind_seconds(now),
            )
            for b in sorted(service.mirrors.get_branches(m.id), key=lambda b: b.branch)
        ]
        report.append(MirrorStatus(m.name, m.source_region, m.source_repository, m.state.value, m.message, branches))
    return report


def stale(report: list[MirrorStatus], max_behind_seconds: float) -> list[str]:
    """What fails a freshness check, one line each: a mirror in state ``failed``, a branch further behind its
    source head than ``max_behind_seconds``, or behind by a time not known yet."""
    lines = []
    for m in report:
        if m.state == "failed":
            lines.append(f"mirror {m.name} is failed: {m.message}")
        for b in m.branches:
            if b.behind_seconds is None:
                lines.append(f"mirror {m.name} branch {b.branch} is behind {b.source_commit_id} (since: unknown)")
            elif b.behind_seconds > max_behind_seconds:
                lines.append(
                    f"mirror {m.name} branch {b.branch} is {b.behind_seconds:.0f}s behind its source head "
                    f"{b.source_commit_id} (more than {max_behind_seconds:g}s)"
                )
    return lines
