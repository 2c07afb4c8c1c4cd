"""Where each mirror of this region stands, per branch: heads, lag, a sync in flight, and recent moves.

Heads, lag and syncs in flight come from the mirrors database; the recent moves of a branch come from whatever
keeps its history (Dagster's event log, through ``orchestration.history``), so ``lakefs-mirror status
--recent 0`` and the freshness check never import Dagster.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..mirrors import MirrorBranch
from ..replication import branch_progress, in_flight_line
from .retry import pending_block

if TYPE_CHECKING:
    from .service import ReplicationService

__all__ = [
    "BRANCH_STATES",
    "BranchStatus",
    "MirrorStatus",
    "Promotion",
    "RecentMoves",
    "branch_state",
    "format_status",
    "stale",
    "status_report",
]


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


#: The last ``limit`` moves of one mirror branch, newest first: ``(mirror, branch, limit)``.
RecentMoves = Callable[[str, str, int], list[Promotion]]


#: Where a mirror branch stands (``BranchStatus.state``; the metrics' ``state`` label): ``in_sync`` (the mirror shows
#: the source head last seen), ``behind`` (it does not, or not yet), ``cooling`` (blocked at that source head, waiting
#: its cooldown before the next try), ``blocked`` (blocked there, the cooldown over: tried again on the next pass),
#: ``failed`` (its mirror is in state ``failed``).
BRANCH_STATES = ("in_sync", "behind", "blocked", "cooling", "failed")


def branch_state(mirror_state: str, record: MirrorBranch | None, now: dt.datetime) -> str:
    """The branch's ``BRANCH_STATES`` entry, from its mirror's state and what the mirrors database records."""
    if mirror_state == "failed":
        return "failed"
    if record is None or record.source_commit_id is None:
        return "behind"  # its first sync has not finished
    if record.in_sync:
        return "in_sync"
    block = pending_block(record, record.source_commit_id)
    if block is None:
        return "behind"
    return "blocked" if block.due(now) else "cooling"


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
    #: The sync advancing the branch now (``replication.in_flight.in_flight_view``); None when idle.
    in_flight: dict[str, Any] | None = None
    #: One of ``BRANCH_STATES`` (``branch_state``).
    state: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "state": self.state,
            "source_commit_id": self.source_commit_id,
            "mirror_commit_id": self.mirror_commit_id,
            "in_sync": self.in_sync,
            "lag_seconds": self.lag_seconds,
            "behind_seconds": None if self.behind_seconds is None else round(self.behind_seconds, 3),
            "promoted_at": self.promoted_at.isoformat() if self.promoted_at else None,
            "recent": [p.as_dict() for p in self.recent],
            "in_flight": self.in_flight,
        }


@dataclass(frozen=True)
class MirrorStatus:
    name: str
    source_region: str
    source_repository: str
    state: str
    message: str
    branches: list[BranchStatus]
    #: ``exact``, or why same-second commits may be listed in another order than at the source (log-order.md).
    log_order: str = "exact"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source_region": self.source_region,
            "source_repository": self.source_repository,
            "state": self.state,
            "message": self.message,
            "log_order": self.log_order,
            "branches": [b.as_dict() for b in self.branches],
        }


def status_report(
    service: ReplicationService,
    *,
    recent: int = 5,
    mirror: str | None = None,
    moves: RecentMoves | None = None,
) -> list[MirrorStatus]:
    """Per mirror of this region (or just ``mirror``) and branch: heads, lag, last ``recent`` moves.

    Heads and lag come from the mirrors database (what the last sync recorded, no lakeFS call); the
    moves come from ``moves`` (Dagster's event log: ``orchestration.history.recent_moves``; none without it). Lag is the
    time from the source commit to its promotion; a branch that is behind shows the source head it is
    behind with ``in_sync`` False. A branch being synced now has its ``in_flight`` progress (also a branch
    whose first sync has not finished: it has no heads yet).
    """
    report = []
    now = dt.datetime.now(dt.UTC)
    for m in service.my_mirrors(name=mirror):
        branches = [
            BranchStatus(
                branch=b.branch,
                source_commit_id=b.record.source_commit_id if b.record else None,
                mirror_commit_id=b.record.mirrored_commit_id if b.record else None,
                in_sync=b.record.in_sync if b.record else False,
                lag_seconds=b.record.lag_seconds if b.record else None,
                promoted_at=b.record.promoted_at if b.record else None,
                recent=moves(m.name, b.branch, recent) if moves is not None and recent > 0 else [],
                behind_seconds=b.record.behind_seconds(now) if b.record else None,
                in_flight=b.in_flight,
                state=branch_state(m.state.value, b.record, now),
            )
            for b in branch_progress(service.mirrors, m.id, now=now)
        ]
        report.append(
            MirrorStatus(
                m.name, m.source_region, m.source_repository, m.state.value, m.message, branches, service.log_order
            )
        )
    return report


def stale(report: list[MirrorStatus], max_behind_seconds: float) -> list[str]:
    """What fails a freshness check, one line each: a mirror in state ``failed``, a branch further behind its
    source head than ``max_behind_seconds``, or behind by a time not known yet."""
    lines = []
    for m in report:
        if m.state == "failed":
            lines.append(f"mirror {m.name} is failed: {m.message}")
        for b in m.branches:
            if b.source_commit_id is None:
                continue  # nothing recorded yet: its first sync is in flight (as before, not judged until it ends)
            if b.behind_seconds is None:
                lines.append(f"mirror {m.name} branch {b.branch} is behind {b.source_commit_id} (since: unknown)")
            elif b.behind_seconds > max_behind_seconds:
                lines.append(
                    f"mirror {m.name} branch {b.branch} is {b.behind_seconds:.0f}s behind its source head "
                    f"{b.source_commit_id} (more than {max_behind_seconds:g}s)"
                )
    return lines


def format_status(report: list[MirrorStatus]) -> str:
    """``status``'s text output: per mirror and branch, where the mirror is, and a sync in flight with its progress."""
    lines = []
    for m in report:
        lines.append(f"mirror {m.name} ({m.state}) of {m.source_region}/{m.source_repository}" + _message(m.message))
        if m.log_order != "exact":
            lines.append(f"  note: {m.log_order}")
        for b in m.branches:
            lines.append(f"  branch {b.branch}: {_where(b)}")
            if b.in_flight is not None:
                lines.append(f"    {in_flight_line(b.in_flight)}")
            lines.extend(
                f"    {p.recorded_at:%Y-%m-%d %H:%M:%S} {p.action} -> {p.mirror_commit_id[:16]} run {p.run_id[:8]}"
                for p in b.recent
            )
    return "\n".join(lines)


def _message(message: str) -> str:
    return f": {message}" if message else ""


def _where(b: BranchStatus) -> str:
    if b.source_commit_id is None:
        return "not mirrored yet"
    if b.in_sync:
        lag = "" if b.lag_seconds is None else f", lag {b.lag_seconds:.1f}s"
        return f"in sync at {b.source_commit_id[:16]}{lag}"
    since = "unknown" if b.behind_seconds is None else f"{b.behind_seconds:.0f}s"
    return f"behind {b.source_commit_id[:16]} for {since} (mirror at {(b.mirror_commit_id or '-')[:16]})"
