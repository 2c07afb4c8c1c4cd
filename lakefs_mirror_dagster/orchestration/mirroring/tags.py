"""One asset per mirror: its tags, as one unpartitioned set.

Tags are many and each one moves rarely, so they are not partitions: one materialization brings every tag
that differs to its source commit (created, moved or deleted), after the same transfer and Spark
validation a branch gets. A tag whose commit fails validation is not created; the others still are, the
blocking ``ranges_validated`` check fails naming the blocked tags, and the run fails so the operator sees it.
The commit sensor requests a run whenever the source's tag set differs from the mirror's.
(No ``from __future__ import annotations`` here: Dagster reads the context annotation at definition time.)
"""

import hashlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ...replication import RefAction, RefResult, TransferStats
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from .checks import ranges_validated_result, ranges_validated_spec

__all__ = ["build_tags_asset", "tags_asset_key", "tags_digest"]

#: How many tag names a materialization lists per action.
MAX_LISTED = 50


def tags_asset_key(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.AssetKey:
    return options.tags_key(mirror)


def tags_digest(tags: Mapping[str, str]) -> str:
    """A short digest of a tag set: run keys and the data version change exactly when a tag does."""
    h = hashlib.sha256()
    for name in sorted(tags):
        h.update(f"{name}\0{tags[name]}\n".encode())
    return h.hexdigest()[:16]


def build_tags_asset(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.AssetsDefinition:
    """The tags asset of one mirror (the mirror is looked up by name at run time)."""
    key = options.tags_key(mirror)

    @dg.asset(
        key=key,
        check_specs=[ranges_validated_spec(key)],
        group_name=options.group_name,
        kinds={"lakefs", "spark"},
        deps=[options.source_key(mirror)],
        required_resource_keys={options.resource_key, options.spark_resource_key},
        description=f"Tags of mirror repository {mirror}, each pointing at the same commit ID as at the source.",
    )
    def tags(context: dg.AssetExecutionContext) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        yield from _mirror_tags(context, options, mirror)

    return tags


@dataclass
class _TagPass:
    """The engine's tag results sorted by what happened to each tag."""

    refs: list[RefResult] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    stats: TransferStats = field(default_factory=TransferStats)

    @classmethod
    def of(cls, refs: list[RefResult]) -> "_TagPass":
        outcome = cls(refs=refs)
        for ref in refs:
            outcome.stats.add(ref.stats)
            if ref.error is not None:
                outcome.blocked[ref.name] = ref.error
            elif ref.action == RefAction.DELETED:
                outcome.deleted.append(ref.name)
            elif ref.action == RefAction.CREATED:
                outcome.created.append(ref.name)
            elif ref.promoted:
                outcome.moved.append(ref.name)
        return outcome


def _mirror_tags(
    context: dg.AssetExecutionContext, options: MirrorDefsOptions, mirror_name: str
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    started = time.monotonic()
    replication = options.replication(context)
    service = replication.service()
    mirror = replication.active_mirror(mirror_name)
    engine, spark = options.spark(context).engine_for(service, mirror, log=context.log.info)
    outcome = _TagPass.of(engine.sync_tags())
    source, after = engine.tags()
    context.log.info(f"{mirror.name}: {len(outcome.refs)} tag(s) differed, {len(outcome.blocked)} blocked")

    error = None
    if outcome.blocked:
        error = "; ".join(f"tag {n}: {why}" for n, why in list(outcome.blocked.items())[:MAX_LISTED])
    yield ranges_validated_result(
        branch="(tags)",
        target=tags_digest(source),
        error=error,
        ranges_validated=outcome.stats.ranges_validated,
        spark=spark,
    )
    yield dg.MaterializeResult(
        metadata=_metadata(mirror_name, outcome, after, started),
        data_version=dg.DataVersion(tags_digest(after)),
    )
    if outcome.blocked:
        raise dg.Failure(
            description=f"{mirror.name}: {len(outcome.blocked)} tag(s) not mirrored: {error}",
            metadata={"blocked_tags": dg.MetadataValue.json(sorted(outcome.blocked)[:MAX_LISTED])},
        )


def _metadata(mirror: str, outcome: _TagPass, after: Mapping[str, str], started: float) -> dict[str, Any]:
    stats = outcome.stats
    return {
        "mirror": mirror,
        "tags": len(after),
        "tags_created": len(outcome.created),
        "tags_moved": len(outcome.moved),
        "tags_deleted": len(outcome.deleted),
        "tags_blocked": len(outcome.blocked),
        "changed": dg.MetadataValue.json(
            {
                "created": outcome.created[:MAX_LISTED],
                "moved": outcome.moved[:MAX_LISTED],
                "deleted": outcome.deleted[:MAX_LISTED],
                "blocked": sorted(outcome.blocked)[:MAX_LISTED],
            }
        ),
        **stats.figures(),
        "duration_seconds": round(time.monotonic() - started, 3),
    }
