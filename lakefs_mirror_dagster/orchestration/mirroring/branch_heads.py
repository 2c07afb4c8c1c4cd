"""One asset per mirror: its branch heads, partitioned by branch name.

Materializing partition ``b`` means "mirror branch ``b`` now points at commit X" (or "was deleted"). The asset
is one call into the engine (``MirrorEngine.sync_branch``: plan, transfer, validate on Spark, promote, record),
then turns its result into the blocking ``ranges_validated`` check and a materialization. A branch that is not
promoted fails the run and has no materialization, so the event log is the history of every mirror branch,
which ``orchestration/history.py`` reads back.
"""

import time
from collections.abc import Iterator
from typing import Any

import dagster as dg

from ...mirrors import Mirror
from ...replication import RefResult
from ..resources import ReplicationResource
from .checks import ranges_validated_result, ranges_validated_spec
from .spark import SparkValidatorResource

__all__ = [
    "ASSET_PREFIX",
    "SYNC_STARTED",
    "branch_partitions",
    "branch_partitions_name",
    "build_branch_heads_asset",
    "mirror_asset_key",
]

ASSET_PREFIX = "lakefs_mirror"
#: Metadata keys every branch-heads materialization carries (``history.py`` reads them back).
META_ACTION = "action"
META_SOURCE_COMMIT = "source_commit_id"
META_MIRROR_COMMIT = "mirror_commit_id"
META_PREVIOUS = "previous_mirror_commit_id"
META_COMMIT_TIME = "commit_time"
META_LAG = "lag_seconds"
#: The run's log line once the run is set up (service, mirror, engine) and the branch's sync begins:
#: ``benchmarks/lag.py`` splits a run's time at it.
SYNC_STARTED = "sync started"


def mirror_asset_key(mirror: str) -> dg.AssetKey:
    return dg.AssetKey([ASSET_PREFIX, mirror, "branch_heads"])


def branch_partitions_name(mirror: str) -> str:
    return f"{mirror}_branches"


def branch_partitions(mirror: str) -> dg.DynamicPartitionsDefinition:
    """Branch names of ``mirror``; the commit sensor adds and removes them."""
    return dg.DynamicPartitionsDefinition(name=branch_partitions_name(mirror))


def build_branch_heads_asset(mirror: str) -> dg.AssetsDefinition:
    """The branch-heads asset of one mirror (the mirror is looked up by name at run time)."""
    key = mirror_asset_key(mirror)

    @dg.asset(
        key=key,
        partitions_def=branch_partitions(mirror),
        check_specs=[ranges_validated_spec(key)],
        group_name="lakefs_mirrors",
        kinds={"lakefs", "spark"},
        description=f"Heads of the branches of mirror repository {mirror}: one partition per branch.",
    )
    def branch_heads(
        context: dg.AssetExecutionContext,
        replication: ReplicationResource,
        spark_validator: SparkValidatorResource,
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        yield from _mirror_branch(context, replication, spark_validator, mirror, context.partition_key)

    return branch_heads


def _mirror_branch(
    context: dg.AssetExecutionContext,
    replication: ReplicationResource,
    spark_validator: SparkValidatorResource,
    mirror_name: str,
    branch: str,
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    started = time.monotonic()
    service = replication.service()
    opened = time.monotonic()
    mirror = replication.active_mirror(mirror_name)
    found = time.monotonic()
    engine, spark = spark_validator.engine_for(service, mirror, log=context.log.info)
    context.log.info(
        f"{mirror.name}/{branch}: {SYNC_STARTED} (set-up: service {opened - started:.2f}s, mirror "
        f"{found - opened:.2f}s, engine {time.monotonic() - found:.2f}s)"
    )
    ref = engine.sync_branch(branch)
    context.log.info(
        f"{mirror.name}/{branch}: {ref.action} (source {ref.source_commit}, mirror was {ref.mirror_commit_before})"
    )
    yield ranges_validated_result(
        branch=branch,
        target=ref.source_commit or "",
        error=ref.error,
        ranges_validated=ref.stats.ranges_validated,
        spark=spark,
    )
    if ref.error is not None:
        raise dg.Failure(
            description=f"{mirror.name}/{branch} not promoted to {ref.source_commit}: {ref.error}",
            metadata={
                "source_commit_id": ref.source_commit or "",
                "mirror_commit_id": ref.mirror_commit or "",
                # transfer.mode external: how many objects the store's replication has yet to deliver
                "objects_awaited": ref.stats.objects_awaited,
                "objects_missing": ref.stats.objects_missing,
            },
        )
    yield _materialization(mirror, ref, started)


def _materialization(mirror: Mirror, ref: RefResult, started: float) -> dg.MaterializeResult:
    stats = ref.stats
    metadata: dict[str, Any] = {
        "mirror": mirror.name,
        "source_repository": mirror.source_repository,
        "source_region": mirror.source_region,
        "branch": ref.name,
        META_ACTION: str(ref.action),
        META_SOURCE_COMMIT: ref.source_commit or "",
        META_MIRROR_COMMIT: ref.mirror_commit or "",
        META_PREVIOUS: ref.mirror_commit_before or "",
        **stats.figures(),
        "ranges": stats.ranges_transferred + stats.ranges_skipped,
        "transfer_path": stats.transfer_path or "none",
        "duration_seconds": round(time.monotonic() - started, 3),
    }
    if ref.source_commit_time is not None:
        metadata[META_COMMIT_TIME] = dg.MetadataValue.timestamp(float(ref.source_commit_time))
    if ref.lag_seconds is not None:
        metadata[META_LAG] = round(ref.lag_seconds, 3)
    return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(ref.mirror_commit or "deleted"))
