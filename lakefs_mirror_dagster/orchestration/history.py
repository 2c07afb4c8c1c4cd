"""Mirror history, read back from Dagster's event log (``region.status`` shows it with each mirror's heads).

Every ``branch_heads`` materialization is one move of one mirror branch (created, advanced, reset, deleted),
so the event log is the history of every mirror branch. Queries are bounded: ``fetch_materializations``
with a limit, newest first, never a scan of the whole log.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import dagster as dg

from ..region.status import Promotion, RecentMoves
from ..replication.results import MOVED
from .options import DEFAULT_OPTIONS, MirrorDefsOptions

__all__ = ["mirror_history", "recent_moves"]

MAX_LIMIT = 10_000


def mirror_history(
    instance: dg.DagsterInstance,
    mirror: str,
    branch: str | None = None,
    *,
    limit: int = 50,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> list[Promotion]:
    """The last ``limit`` moves of ``mirror``'s branches (or of ``branch`` only), newest first. Materializations
    that moved nothing (``action: unchanged``, recorded by releases before 0.2) are not moves and are left out."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    records_filter = dg.AssetRecordsFilter(
        asset_key=options.branch_heads_key(mirror), asset_partitions=[branch] if branch is not None else None
    )
    result = instance.fetch_materializations(records_filter, limit=limit, ascending=False)
    promotions = []
    for record in result.records:
        event = record.asset_materialization
        if event is None or not _is_move(event):
            continue
        promotions.append(_promotion(mirror, event, record.timestamp, record.run_id))
    return promotions


def _is_move(event: dg.AssetMaterialization) -> bool:
    action = event.metadata.get("action")
    return action is None or str(action.value) in {str(a) for a in MOVED}


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


def recent_moves(instance: dg.DagsterInstance, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> RecentMoves:
    """``region.status.status_report``'s source of each branch's recent moves: this instance's event log."""
    return lambda mirror, branch, limit: mirror_history(instance, mirror, branch, limit=limit, options=options)
