"""``refs_migration_job``: dump -> copy -> restore of a list of repositories, one mapped branch each.

The same library functions as ``lakefs-mirror refs dump|restore`` do the work, so the CLI and the job cannot
drift apart. Restoring into the source region (a store migration) reuses the repository's name: the source
record is removed only after its data was copied, and recreated from its manifest if the restore fails. Every
precondition of every repository is checked before any is touched.
"""

# No ``from __future__ import annotations``: Dagster resolves op annotations (config classes) at runtime.
import re
from typing import Any

import dagster as dg
from pydantic import Field

from ..lakefs import LakeFSClient
from ..refs import (
    RefsError,
    RepositoryManifest,
    check_restorable,
    dump_repository,
    migrate_repository,
    parse_manifest,
)
from ..storage import join_namespace
from .options import DEFAULT_OPTIONS, MirrorDefsOptions
from .resources import ReplicationResource

__all__ = ["RefsMigrationConfig", "build_refs_migration_job", "refs_migration_definitions", "refs_migration_job"]


class RefsMigrationConfig(dg.Config):
    """Which repositories go where (run config under ``ops.plan_refs_migration.config``)."""

    repositories: list[str] = Field(description="repositories to migrate (in the source region)")
    target_namespace_root: str = Field(description="new namespaces are <root>/<repository>")
    storage_id: str = Field(default="", description="lakeFS storage id of the new store")
    copy_data: bool = Field(default=True, description="copy each namespace to its new place first")
    source_region: str = Field(default="", description="region to dump from (default: the config's)")
    target_region: str = Field(default="", description="region to restore into (default: the config's)")
    manifest_dir: str = Field(default="refs-manifests", description="where the dumps' manifests are written")


def _client(replication: ReplicationResource, region: str) -> LakeFSClient:
    service = replication.service()
    return service.client(region or service.config.region)


def _mapping_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _plan_refs_migration(
    context: dg.OpExecutionContext, config: RefsMigrationConfig, replication: ReplicationResource
) -> Any:
    """Check every repository's preconditions (nothing is changed), then fan out one branch per repository."""
    if not config.repositories:
        raise dg.Failure("refs migration: the run config names no repositories")
    if len(set(config.repositories)) != len(config.repositories):
        raise dg.Failure("refs migration: a repository is named twice")
    service = replication.service()
    source_region = config.source_region or service.config.region
    target_region = config.target_region or service.config.region
    same = source_region == target_region
    if same and not config.copy_data:
        raise dg.Failure(
            "refs migration within one region needs copy_data: true (without a copy it would restore the "
            "repositories onto the namespaces they already use)"
        )
    source, target = service.client(source_region), service.client(target_region)
    root = config.target_namespace_root
    for name in config.repositories:
        repo = source.get_repository(name)
        planned = RepositoryManifest(
            name=name,
            storage_namespace=join_namespace(root, name),
            default_branch=repo.default_branch,
            commits_meta_range_id="0",
            tags_meta_range_id="0",
            branches_meta_range_id="0",
        )
        try:
            check_restorable(target, planned, storage_id=config.storage_id, replacing=name if same else None)
        except RefsError as exc:
            raise dg.Failure(f"refs migration of {name}: {exc}") from exc
    for name in config.repositories:
        yield dg.DynamicOutput(
            {
                "repository": name,
                "target_namespace": join_namespace(root, name),
                "storage_id": config.storage_id,
                "copy_data": config.copy_data,
                "source_region": source_region,
                "target_region": target_region,
                "manifest_dir": config.manifest_dir,
            },
            mapping_key=_mapping_key(name),
        )


def _dump_repository_refs(context: dg.OpExecutionContext, plan: dict, replication: ReplicationResource) -> dict:
    """lakeFS's refs dump of one repository; the manifest is written to ``manifest_dir`` and passed on."""
    client = _client(replication, plan["source_region"])
    read_only = client.get_repository(plan["repository"]).read_only
    result = dump_repository(client, plan["repository"], plan["manifest_dir"])
    context.add_output_metadata({"manifest": str(result.path), "old_namespace": result.manifest.storage_namespace})
    return {**plan, "manifest": result.manifest.to_json(), "source_read_only": read_only}


def _restore_repository_refs(context: dg.OpExecutionContext, dumped: dict, replication: ReplicationResource) -> dict:
    """Copy the namespace (when asked) and restore the refs on the new one, with rollback on failure."""
    service = replication.service()
    manifest = parse_manifest(dumped["manifest"], source=f"dump of {dumped['repository']}")
    result = migrate_repository(
        _client(replication, dumped["target_region"]),
        manifest,
        config=service.config,
        target_namespace=dumped["target_namespace"],
        copy_data=dumped["copy_data"],
        storage_id=dumped["storage_id"],
        replace_source=dumped["source_region"] == dumped["target_region"],
        source_read_only=dumped["source_read_only"],
    )
    copied = result.copy.copied if result.copy else 0
    context.add_output_metadata(
        {"repository": result.repository.id, "namespace": result.repository.storage_namespace, "objects": copied}
    )
    return {
        "repository": result.repository.id,
        "storage_namespace": result.repository.storage_namespace,
        "objects_copied": copied,
        "bytes_copied": result.copy.bytes_copied if result.copy else 0,
    }


@dg.op
def summarize_refs_migration(context: dg.OpExecutionContext, results: list[dict]) -> list[dict]:
    """One line per migrated repository in the run's log and metadata."""
    for r in results:
        context.log.info(f"migrated {r['repository']} to {r['storage_namespace']} ({r['objects_copied']} objects)")
    context.add_output_metadata({"repositories": dg.MetadataValue.json(results)})
    return results


def build_refs_migration_job(options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.JobDefinition:
    """The job on the resource ``options.resource_key`` (its ops keep their names whatever the options)."""
    needs = {options.resource_key}

    @dg.op(name="plan_refs_migration", out=dg.DynamicOut(dict), required_resource_keys=needs)
    def plan_refs_migration(context: dg.OpExecutionContext, config: RefsMigrationConfig) -> Any:
        yield from _plan_refs_migration(context, config, options.replication(context))

    @dg.op(name="dump_repository_refs", required_resource_keys=needs)
    def dump_repository_refs(context: dg.OpExecutionContext, plan: dict) -> dict:
        return _dump_repository_refs(context, plan, options.replication(context))

    @dg.op(name="restore_repository_refs", required_resource_keys=needs)
    def restore_repository_refs(context: dg.OpExecutionContext, dumped: dict) -> dict:
        return _restore_repository_refs(context, dumped, options.replication(context))

    @dg.job(
        name=options.job_name("refs_migration_job"),
        description="Move repositories to another store or region: refs dump -> namespace copy -> refs restore.",
        tags={"lakefs_mirror/kind": "refs_migration"},
    )
    def refs_migration_job() -> None:
        migrated = plan_refs_migration().map(dump_repository_refs).map(restore_repository_refs)
        summarize_refs_migration(migrated.collect())

    return refs_migration_job


refs_migration_job = build_refs_migration_job()


def refs_migration_definitions(options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.Definitions:
    """The refs-migration domain: one job, run on demand, on the resource ``options.resource_key``."""
    job = refs_migration_job if options == DEFAULT_OPTIONS else build_refs_migration_job(options)
    return dg.Definitions(jobs=[job])
