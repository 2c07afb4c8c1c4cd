"""The blocking ``ranges_validated`` check: a branch is promoted only after it passed.

The check is emitted by the branch-heads asset itself, *before* promotion: a failed result is followed
by a step failure and no materialization, so neither the mirror branch nor the event log ever claims a
commit that was not completely present at the destination.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg

from ...replication import RangeValidation

if TYPE_CHECKING:
    from ...spark.wiring import SparkUse

__all__ = [
    "MAX_REPORTED_MISSING",
    "RANGES_VALIDATED",
    "ranges_validated_evaluation",
    "ranges_validated_result",
    "ranges_validated_spec",
]

RANGES_VALIDATED = "ranges_validated"
#: How many missing objects a failed check lists in its metadata.
MAX_REPORTED_MISSING = 20


def ranges_validated_spec(
    asset_key: dg.AssetKey, partitions: dg.PartitionsDefinition | None = None
) -> dg.AssetCheckSpec:
    """The check of a mirror asset; with ``partitions`` (the branch partitions) it is evaluated per branch."""
    return dg.AssetCheckSpec(
        RANGES_VALIDATED,
        asset=asset_key,
        blocking=True,
        partitions_def=partitions,
        description=(
            "Every range of the target commit, and every object those ranges name, is present at the "
            "destination with the recorded size (validated on Spark). A failure leaves the branch unpromoted."
        ),
    )


def ranges_validated_evaluation(
    asset_key: dg.AssetKey,
    *,
    branch: str,
    target: str,
    error: str | None,
    ranges_validated: int,
    spark: SparkUse,
    partitioned_run: bool,
) -> dg.AssetCheckResult | dg.AssetCheckEvaluation:
    """One branch's outcome: the step's check result in a one-branch run (Dagster files it under the run's
    partition), else an evaluation of that branch's partition (a run of many branches has no one partition)."""
    result = ranges_validated_result(
        branch=branch,
        target=target,
        error=error,
        ranges_validated=ranges_validated,
        spark=spark,
        missing_from_spark=not partitioned_run,
    )
    if not partitioned_run:
        return result
    return dg.AssetCheckEvaluation(
        asset_key=asset_key,
        check_name=RANGES_VALIDATED,
        passed=result.passed,
        metadata=result.metadata,
        severity=result.severity,
        description=result.description,
        partition=branch,
    )


def ranges_validated_result(
    *,
    branch: str,
    target: str,
    error: str | None,
    ranges_validated: int,
    spark: SparkUse,
    missing_from_spark: bool = True,
) -> dg.AssetCheckResult:
    """The check's outcome for one promotion attempt (``branch`` names the ref or ``(tags)``): the engine's
    error, and (``missing_from_spark``: the run synced this ref alone) the first missing objects the run's Spark
    validator found."""
    failures: Sequence[RangeValidation] = (
        spark.validator.failures if spark.validator is not None and missing_from_spark else []
    )
    validated_on: Iterable[str] = spark.validator.paths if spark.validator is not None else ()
    missing: list[str] = []
    for failure in failures:
        if failure.error:
            missing.append(failure.error)
        missing.extend(failure.missing)
        if failure.strict_full_addresses:
            missing.extend(f"{a} (full address, refused by strict_full_addresses)" for a in failure.full_addresses)
    metadata: dict[str, Any] = {
        "branch": branch,
        "target_commit_id": target,
        "ranges_validated": ranges_validated,
        "validated_on": "+".join(sorted(validated_on)) or "none",
        "failed_ranges": len(failures),
        "missing_objects": sum(f.missing_count for f in failures),
    }
    if missing:
        metadata["first_missing"] = dg.MetadataValue.json(missing[:MAX_REPORTED_MISSING])
    if error:
        metadata["error"] = dg.MetadataValue.text(error)
    return dg.AssetCheckResult(
        check_name=RANGES_VALIDATED,
        passed=error is None,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=metadata,
        description=None if error is None else f"branch {branch} not promoted to {target}: {error}",
    )
