"""The ``fresh`` check of each mirror's branch-heads asset: is any branch too far behind its source head?

Dagster's own freshness policies judge an asset by the age of its last materialization. A mirror branch whose
source does not change is materialized rarely and is still perfectly fresh, so that measure would raise false
alarms. This check measures what matters instead: ``behind_seconds`` per branch (how long the mirror has been
missing the source head it was last seen at, from the mirrors database, the same figure ``status`` prints).

The commit sensor evaluates it on every tick and reports the result without a run (a runless check
evaluation) when it changes, and on every tick while it fails, so the lag values in its metadata plot over time
in the UI. It can also be executed from the UI like any asset check.
"""

from typing import Any

import dagster as dg

from ...region import ReplicationService
from ...region.status import MirrorStatus, stale, status_report
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions

__all__ = ["FRESH", "build_fresh_check", "fresh_evaluation"]

FRESH = "fresh"


def fresh_evaluation(
    service: ReplicationService,
    mirror: str,
    max_behind_seconds: float,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> dg.AssetCheckEvaluation:
    """The check's outcome now: failed naming each branch (and its lag) further behind than the threshold."""
    report: list[MirrorStatus] = status_report(service, recent=0, mirror=mirror)
    problems = stale(report, max_behind_seconds)
    behind = {b.branch: b.behind_seconds for m in report for b in m.branches if not b.in_sync}
    known = [v for v in behind.values() if v is not None]
    metadata: dict[str, Any] = {
        "max_behind_seconds": round(max(known), 3) if known else 0.0,
        "branches_behind": len(behind),
        "threshold_seconds": max_behind_seconds,
    }
    if problems:
        metadata["stale"] = dg.MetadataValue.md("\n".join(f"- {line}" for line in problems))
    return dg.AssetCheckEvaluation(
        asset_key=options.branch_heads_key(mirror),
        check_name=FRESH,
        passed=not problems,
        metadata=metadata,
        description="; ".join(problems[:5]) or f"every branch within {max_behind_seconds:g}s of its source head",
    )


def outcome_key(evaluation: dg.AssetCheckEvaluation) -> str:
    """What a change of outcome is: passing, or failing for this set of branches."""
    return "passed" if evaluation.passed else "failed:" + str(evaluation.description)


def build_fresh_check(
    mirror: str, max_behind_seconds: float, options: MirrorDefsOptions = DEFAULT_OPTIONS
) -> dg.AssetChecksDefinition:
    """The check as a definition, so the UI lists it under the asset and can execute it."""

    @dg.asset_check(
        asset=options.branch_heads_key(mirror),
        name=FRESH,
        required_resource_keys={options.resource_key},
        description=f"No branch of {mirror} is more than {max_behind_seconds:g}s behind its source head.",
    )
    def fresh(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        evaluation = fresh_evaluation(options.replication(context).service(), mirror, max_behind_seconds, options)
        return dg.AssetCheckResult(
            passed=evaluation.passed, metadata=evaluation.metadata, description=evaluation.description
        )

    return fresh
