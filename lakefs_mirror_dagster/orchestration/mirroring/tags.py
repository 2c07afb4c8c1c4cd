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

from ...lakefs import LakeFSClient, LakeFSNotFound
from ...replication import TransferStats
from ...replication.engine import MirrorEngine
from ..resources import ReplicationResource
from .branch_heads import ASSET_PREFIX
from .checks import ranges_validated_result, ranges_validated_spec
from .spark import SparkValidatorResource

__all__ = ["build_tags_asset", "list_tags", "tags_asset_key", "tags_digest"]

#: How many tag names a materialization lists per action.
MAX_LISTED = 50


def tags_asset_key(mirror: str) -> dg.AssetKey:
    return dg.AssetKey([ASSET_PREFIX, mirror, "tags"])


def list_tags(client: LakeFSClient, repo: str, *, page_size: int) -> dict[str, str]:
    """Tag name -> commit ID (empty when the repository does not exist yet)."""
    try:
        return {r.id: r.commit_id for r in client.list_tags(repo, page_size=page_size)}
    except LakeFSNotFound:
        return {}


def tags_digest(tags: Mapping[str, str]) -> str:
    """A short digest of a tag set: run keys and the data version change exactly when a tag does."""
    h = hashlib.sha256()
    for name in sorted(tags):
        h.update(f"{name}\0{tags[name]}\n".encode())
    return h.hexdigest()[:16]


def build_tags_asset(mirror: str) -> dg.AssetsDefinition:
    """The tags asset of one mirror (the mirror is looked up by name at run time)."""
    key = tags_asset_key(mirror)

    @dg.asset(
        key=key,
        check_specs=[ranges_validated_spec(key)],
        group_name="lakefs_mirrors",
        kinds={"lakefs", "spark"},
        description=f"Tags of mirror repository {mirror}, each pointing at the same commit ID as at the source.",
    )
    def tags(
        context: dg.AssetExecutionContext,
        replication: ReplicationResource,
        spark_validator: SparkValidatorResource,
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        yield from _mirror_tags(context, replication, spark_validator, mirror)

    return tags


@dataclass
class _TagPass:
    created: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    stats: TransferStats = field(default_factory=TransferStats)


def _mirror_tags(
    context: dg.AssetExecutionContext,
    replication: ReplicationResource,
    spark_validator: SparkValidatorResource,
    mirror_name: str,
) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
    started = time.monotonic()
    service = replication.service()
    mirror = replication.active_mirror(mirror_name)
    page = service.config.commit_sensor.list_branch_page_size
    engine, validator = spark_validator.engine_for(service, mirror)
    engine.ensure_mirror_repository()
    source = list_tags(service.client(mirror.source_region), mirror.source_repository, page_size=page)
    current = list_tags(service.client(mirror.destination_region), mirror.name, page_size=page)
    differing = sorted(n for n in set(source) | set(current) if source.get(n) != current.get(n))
    context.log.info(f"{mirror.name}: {len(differing)} of {len(set(source) | set(current))} tag(s) differ")

    outcome = _TagPass()
    for name in differing:
        _sync_tag(engine, name, source.get(name), current.get(name), outcome)

    error = None
    if outcome.blocked:
        error = "; ".join(f"tag {n}: {why}" for n, why in list(outcome.blocked.items())[:MAX_LISTED])
    yield ranges_validated_result(
        branch="(tags)",
        target=tags_digest(source),
        error=error,
        failures=validator.failures,
        ranges_validated=outcome.stats.ranges_validated,
        validated_on=validator.paths,
    )
    after = list_tags(service.client(mirror.destination_region), mirror.name, page_size=page)
    yield dg.MaterializeResult(
        metadata=_metadata(mirror_name, outcome, after, started),
        data_version=dg.DataVersion(tags_digest(after)),
    )
    if outcome.blocked:
        raise dg.Failure(
            description=f"{mirror.name}: {len(outcome.blocked)} tag(s) not mirrored: {error}",
            metadata={"blocked_tags": dg.MetadataValue.json(sorted(outcome.blocked)[:MAX_LISTED])},
        )


def _sync_tag(engine: MirrorEngine, name: str, target: str | None, current: str | None, outcome: _TagPass) -> None:
    """Move one tag (the engine transfers and validates first); record what happened."""
    ref = engine.sync_ref("tag", name, target, current)
    outcome.stats.add(ref.stats)
    if ref.error:
        outcome.blocked[name] = ref.error
    elif ref.action == "deleted":
        outcome.deleted.append(name)
    elif current is None:
        outcome.created.append(name)
    else:
        outcome.moved.append(name)


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
