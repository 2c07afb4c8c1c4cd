"""One asset per mirror: its branch heads, partitioned by branch name.

Materializing partition ``b`` means "mirror branch ``b`` now points at commit X" (or "was deleted"):
the asset asks the engine to transfer and validate (on Spark) everything the source head needs, emits the
blocking ``ranges_validated`` check, and only then promotes. The event log is therefore the history of
every mirror branch, which ``history.py`` reads back.
"""

import time
from collections.abc import Iterator
from typing import Any

import dagster as dg

from ...lakefs import LakeFSClient, LakeFSNotFound
from ...mirrors import Mirror
from ...replication import MirrorRefMoved, MirrorSyncResult, RefResult, ReplicationService
from ..resources import ReplicationResource
from .checks import ranges_validated_result, ranges_validated_spec
from .spark import SparkValidatorResource

__all__ = [
    "ASSET_PREFIX",
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
    mirror = replication.active_mirror(mirror_name)
    engine, validator = spark_validator.engine_for(service, mirror)
    engine.ensure_mirror_repository()
    source_head = _head(service.client(mirror.source_region), mirror.source_repository, branch)
    mirror_head = _head(service.client(mirror.destination_region), mirror.name, branch)
    context.log.info(f"{mirror.name}/{branch}: source head {source_head}, mirror head {mirror_head}")

    if source_head is None or source_head == mirror_head:
        # Deleted at the source (delete here too), or already there: nothing to validate.
        ref = engine.sync_ref("branch", branch, source_head, mirror_head)
        if ref.error:
            raise dg.Failure(f"{mirror.name}/{branch}: {ref.error}")
        _record(service, mirror, ref)
        yield ranges_validated_result(
            branch=branch, target=source_head or "", error=None, failures=[], ranges_validated=0
        )
        yield _materialization(mirror, ref, started)
        return

    prepared = engine.prepare("branch", branch, source_head)
    yield ranges_validated_result(
        branch=branch,
        target=source_head,
        error=prepared.error,
        failures=validator.failures,
        ranges_validated=prepared.stats.ranges_validated,
        validated_on=validator.paths,
    )
    if prepared.error is not None:
        blocked = RefResult("branch", branch, source_head, mirror_head, mirror_head, "blocked", prepared.stats)
        blocked.error = prepared.error
        _record(service, mirror, blocked)
        raise dg.Failure(
            description=f"{mirror.name}/{branch} not promoted to {source_head}: {prepared.error}",
            metadata={"source_commit_id": source_head, "mirror_commit_id": mirror_head or ""},
        )
    try:
        action = engine.promote(prepared, mirror_head)
    except MirrorRefMoved as exc:  # the commit sensor's run key has the mirror head: it requests a fresh run
        raise dg.Failure(str(exc)) from exc
    ref = RefResult("branch", branch, source_head, mirror_head, source_head, action, prepared.stats)
    engine.note_lag(ref)
    _record(service, mirror, ref)
    yield _materialization(mirror, ref, started)


def _materialization(mirror: Mirror, ref: RefResult, started: float) -> dg.MaterializeResult:
    stats = ref.stats
    metadata: dict[str, Any] = {
        "mirror": mirror.name,
        "source_repository": mirror.source_repository,
        "source_region": mirror.source_region,
        "branch": ref.name,
        META_ACTION: ref.action,
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


def _record(service: ReplicationService, mirror: Mirror, ref: RefResult) -> None:
    service.record(mirror, MirrorSyncResult(mirror=mirror.name, source_repository=mirror.source_repository, refs=[ref]))


def _head(client: LakeFSClient, repo: str, branch: str) -> str | None:
    try:
        return client.get_branch_head(repo, branch)
    except LakeFSNotFound:
        return None
