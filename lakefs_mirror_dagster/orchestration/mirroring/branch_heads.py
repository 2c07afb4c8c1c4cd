"""One asset per mirror: its branch heads, partitioned by branch name, downstream of the source repository.

Materializing partition ``b`` means "mirror branch ``b`` now points at commit X" (or "was deleted"). A run of one
or many branch partitions (a UI backfill of N branches is one run: ``BackfillPolicy.single_run``) is one call into
the engine (``MirrorEngine.sync_branch``, or ``sync`` on its branch workers), then each branch's result becomes its
own ``ranges_validated`` check evaluation (per partition, so the UI shows which branch is blocked) and, only when
the branch moved, its materialization. A branch already in sync is not materialized, and a blocked one fails the
run after the others were recorded, so the event log is the history of every mirror branch's moves, which
``orchestration/history.py`` reads back.
"""

import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg

from ...mirrors import Mirror
from ...replication import RefResult
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from .checks import ranges_validated_evaluation, ranges_validated_spec

__all__ = [
    "ASSET_PREFIX",
    "SYNC_STARTED",
    "branch_partitions",
    "branch_partitions_name",
    "build_branch_heads_asset",
    "build_source_asset",
    "commit_url",
    "mirror_asset_key",
]

ASSET_PREFIX = DEFAULT_OPTIONS.key_prefix[0]
#: Metadata keys every branch-heads materialization carries (``history.py`` reads them back).
META_ACTION = "action"
META_SOURCE_COMMIT = "source_commit_id"
META_MIRROR_COMMIT = "mirror_commit_id"
META_PREVIOUS = "previous_mirror_commit_id"
META_COMMIT_TIME = "commit_time"
META_LAG = "lag_seconds"
#: The run's log line once the run is set up (service, mirror, engine) and the branches' sync begins:
#: ``benchmarks/lag.py`` splits a run's time at it.
SYNC_STARTED = "sync started"


def mirror_asset_key(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.AssetKey:
    return options.branch_heads_key(mirror)


def branch_partitions_name(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> str:
    return options.partitions_name(mirror)


def branch_partitions(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.DynamicPartitionsDefinition:
    """Branch names of ``mirror``; the commit sensor adds and removes them."""
    return dg.DynamicPartitionsDefinition(name=options.partitions_name(mirror))


def commit_url(endpoint: str, repository: str, commit: str) -> str:
    """The commit's page in the lakeFS UI of ``endpoint`` (a region's base URL)."""
    return f"{endpoint.rstrip('/')}/repositories/{repository}/commits/{commit}"


def build_source_asset(mirror: Mirror | str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.AssetSpec:
    """The source repository as an external asset upstream of the mirror (lakeFS writes it, not Dagster)."""
    name = mirror if isinstance(mirror, str) else mirror.name
    metadata: dict[str, Any] = {"mirror": name}
    if not isinstance(mirror, str):
        metadata.update(source_repository=mirror.source_repository, source_region=mirror.source_region)
    return dg.AssetSpec(
        options.source_key(name),
        group_name=options.group_name,
        kinds={"lakefs"},
        description=f"The source repository of mirror {name}, in its source region (written through lakeFS).",
        metadata=metadata,
    )


def build_branch_heads_asset(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.AssetsDefinition:
    """The branch-heads asset of one mirror (the mirror is looked up by name at run time)."""
    key = options.branch_heads_key(mirror)
    partitions = branch_partitions(mirror, options)
    spec = dg.AssetSpec(
        key,
        partitions_def=partitions,
        # A branch already in sync is not materialized (nothing moved), so the output may be skipped.
        skippable=True,
        group_name=options.group_name,
        kinds={"lakefs", "spark"},
        deps=[options.source_key(mirror)],
        description=f"Heads of the branches of mirror repository {mirror}: one partition per branch.",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        warnings.simplefilter("ignore", category=dg.PreviewWarning)

        @dg.multi_asset(
            name=key.to_python_identifier(),
            specs=[spec],
            check_specs=[ranges_validated_spec(key, partitions)],
            can_subset=True,
            backfill_policy=dg.BackfillPolicy.single_run(),
            required_resource_keys={options.resource_key, options.spark_resource_key},
        )
        def branch_heads(context: dg.AssetExecutionContext) -> Iterator[Any]:
            yield from _mirror_branches(context, options, mirror, context.partition_keys)

    return branch_heads


def _mirror_branches(
    context: dg.AssetExecutionContext, options: MirrorDefsOptions, mirror_name: str, branches: Sequence[str]
) -> Iterator[dg.AssetCheckResult | dg.AssetCheckEvaluation | dg.MaterializeResult | dg.AssetMaterialization]:
    started = time.monotonic()
    replication = options.replication(context)
    service = replication.service()
    opened = time.monotonic()
    mirror = replication.active_mirror(mirror_name)
    found = time.monotonic()
    single = len(branches) == 1
    engine, spark = options.spark(context).engine_for(service, mirror, log=context.log.info, per_ref=single)
    what = branches[0] if single else f"{len(branches)} branches"
    context.log.info(
        f"{mirror.name}/{what}: {SYNC_STARTED} (set-up: service {opened - started:.2f}s, mirror "
        f"{found - opened:.2f}s, engine {time.monotonic() - found:.2f}s)"
    )
    refs = [engine.sync_branch(branches[0])] if single else engine.sync(branches=branches, tags=False).refs
    if not single:  # the engine's last word: refs done, objects, bytes (its per-ref lines are off in such runs)
        context.log.info(f"progress: {engine.progress.snapshot().line()}")
    key = options.branch_heads_key(mirror.name)
    source_endpoint = service.config.endpoint_for(mirror.source_region)
    for ref in refs:
        if single or ref.error is not None:  # a run of many branches: its check evaluations say the rest
            was = ref.mirror_commit_before
            context.log.info(f"{mirror.name}/{ref.name}: {ref.action} (source {ref.source_commit}, mirror was {was})")
        yield ranges_validated_evaluation(
            key,
            branch=ref.name,
            target=ref.source_commit or "",
            error=ref.error,
            ranges_validated=ref.stats.ranges_validated,
            spark=spark,
            partitioned_run=not single,
        )
        if ref.error is None and ref.moved:
            yield _materialization(key, mirror, ref, started, single, source_endpoint)
    synced = {ref.name for ref in refs}
    for gone in (b for b in branches if b not in synced):  # on neither side: the commit sensor drops it
        context.log.info(f"{mirror.name}/{gone}: neither the source nor the mirror has this branch")
    failed = [ref for ref in refs if ref.error is not None]
    if failed:
        first = failed[0]
        raise dg.Failure(
            description=f"{mirror.name}: {len(failed)} branch(es) not promoted: "
            + "; ".join(f"{r.name} to {r.source_commit}: {r.error}" for r in failed[:10]),
            metadata={
                "blocked_branches": dg.MetadataValue.json(sorted(r.name for r in failed)[:50]),
                "source_commit_id": first.source_commit or "",
                "mirror_commit_id": first.mirror_commit or "",
                # transfer.mode external: how many objects the store's replication has yet to deliver
                "objects_awaited": sum(r.stats.objects_awaited for r in failed),
                "objects_missing": sum(r.stats.objects_missing for r in failed),
            },
        )


def _materialization(
    key: dg.AssetKey, mirror: Mirror, ref: RefResult, started: float, single: bool, source_endpoint: str
) -> dg.MaterializeResult | dg.AssetMaterialization:
    """The branch's move: the step's output in a one-branch run, else a materialization of its partition."""
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
    if ref.source_commit:
        metadata["source_commit"] = dg.MetadataValue.url(
            commit_url(source_endpoint, mirror.source_repository, ref.source_commit)
        )
    if ref.source_commit_time is not None:
        metadata[META_COMMIT_TIME] = dg.MetadataValue.timestamp(float(ref.source_commit_time))
    if ref.lag_seconds is not None:
        metadata[META_LAG] = round(ref.lag_seconds, 3)
    if single:
        return dg.MaterializeResult(
            asset_key=key, metadata=metadata, data_version=dg.DataVersion(ref.mirror_commit or "deleted")
        )
    return dg.AssetMaterialization(asset_key=key, partition=ref.name, metadata=metadata)
