"""``gc_deletions_job`` and ``gc_deletions_schedule``: what lakeFS garbage collection deleted at the sources is
deleted from this region's mirrors, as ``lakefs-mirror gc`` does (``region.gc_deletions`` does the work).

The schedule runs on ``garbage_collection.cron_schedule`` (UTC) and starts **stopped**, as Dagster schedules do:
deleting is irreversible, so an operator turns it on in the UI (or launches the job by hand, with ``dry_run``
first). Run config (under ``ops.replicate_gc_deletions.config``): ``mirror`` (default: every active mirror of
the region) and ``dry_run``.
"""

# No ``from __future__ import annotations``: Dagster resolves op annotations (config classes) at runtime.
from typing import Any

import dagster as dg
from pydantic import Field

from ..config import GarbageCollectionConfig, ReplicationConfig
from .options import DEFAULT_OPTIONS, MirrorDefsOptions
from .resources import ReplicationResource

__all__ = ["GcDeletionsConfig", "build_gc_deletions_job", "gc_deletions_definitions", "gc_deletions_job"]

SCHEDULE_NAME = "gc_deletions_schedule"


class GcDeletionsConfig(dg.Config):
    """Which mirrors, and whether to delete or only list."""

    mirror: str = Field(default="", description="only this mirror (default: every active mirror of the region)")
    dry_run: bool = Field(default=False, description="list what would be deleted; change nothing")


def _replicate_gc_deletions(
    context: dg.OpExecutionContext, config: GcDeletionsConfig, replication: ReplicationResource
) -> list[dict[str, Any]]:
    """One pass over the mirrors; the metadata says what was deleted per mirror. A mirror that failed fails the
    run (after every other mirror was done), naming it."""
    from ..region import run_gc_deletions

    results = run_gc_deletions(replication.service(), name=config.mirror or None, dry_run=config.dry_run)
    if config.mirror and not results:
        raise dg.Failure(f"no mirror named {config.mirror!r} in this region")
    docs = [r.to_json() for r in results]
    metadata: dict[str, dg.MetadataValue] = {
        "dry_run": dg.MetadataValue.bool(config.dry_run),
        "deleted": dg.MetadataValue.int(sum(r.deleted for r in results)),
        "bytes_deleted": dg.MetadataValue.int(sum(r.bytes_deleted for r in results)),
        "waiting": dg.MetadataValue.int(sum(r.waiting for r in results)),
        "mirrors": dg.MetadataValue.json(docs),
    }
    for r in results:
        verb = "would delete" if r.dry_run else "deleted"
        problem = f"; {r.error}" if r.error else ""
        context.log.info(f"{r.mirror}: {verb} {r.deleted}, {r.waiting} in the grace period{problem}")
    failed = [r for r in results if not r.ok]
    if failed:
        raise dg.Failure(
            "garbage-collection deletions failed for " + "; ".join(f"{r.mirror}: {r.error}" for r in failed),
            metadata=metadata,
        )
    context.add_output_metadata(metadata)
    return docs


def build_gc_deletions_job(options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.JobDefinition:
    """The job on the resource ``options.resource_key`` (its op is ``replicate_gc_deletions`` whatever the options)."""

    @dg.op(name="replicate_gc_deletions", required_resource_keys={options.resource_key})
    def replicate_gc_deletions(context: dg.OpExecutionContext, config: GcDeletionsConfig) -> list[dict[str, Any]]:
        return _replicate_gc_deletions(context, config, options.replication(context))

    @dg.job(
        name=options.job_name("gc_deletions_job"),
        description="Delete from this region's mirrors what lakeFS garbage collection deleted at their sources "
        "(after garbage_collection.grace_period).",
        tags={"lakefs_mirror/kind": "gc_deletions"},
    )
    def gc_deletions_job() -> None:
        replicate_gc_deletions()

    return gc_deletions_job


gc_deletions_job = build_gc_deletions_job()


def gc_deletions_definitions(
    config: ReplicationConfig | None, options: MirrorDefsOptions = DEFAULT_OPTIONS
) -> dg.Definitions:
    """The job and its schedule (``garbage_collection.cron_schedule``; the default when there is no config)."""
    settings = config.garbage_collection if config is not None else GarbageCollectionConfig()
    job = gc_deletions_job if options == DEFAULT_OPTIONS else build_gc_deletions_job(options)
    schedule = dg.ScheduleDefinition(
        name=options.job_name(SCHEDULE_NAME),
        job=job,
        cron_schedule=settings.cron_schedule,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description="gc_deletions_job on garbage_collection.cron_schedule; starts stopped (deleting is irreversible)",
    )
    return dg.Definitions(jobs=[job], schedules=[schedule])
