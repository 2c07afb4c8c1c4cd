"""``refs restore``: a bare repository created from a manifest, with lakeFS's refs restore into it.

lakeFS restores refs only into a *bare* repository (no initial commit, no default branch). Creating a
bare repository skips lakeFS's storage-namespace probe, which is what lets a restore reuse a namespace that
already holds the repository's data and ``_lakefs/`` files. That also means lakeFS does not stop two
repositories from sharing a namespace here, so this module checks it, and every other precondition,
before it creates anything. A restore that fails afterwards removes the repository again.
"""

from __future__ import annotations

import logging

from ..lakefs import LakeFSClient, LakeFSError, LakeFSNotFound, Repository
from ..lakefs.sdk import import_sdk
from ..mirrors import NamespaceInUse, NamespaceOverlap
from ..replication.namespaces import check_namespace_free
from .errors import RefsError
from .manifest import RepositoryManifest
from .tasks import DEFAULT_POLLING, TaskPolling, delete_repository_and_wait, wait_for_task

__all__ = ["check_restorable", "restore_refs", "restore_repository", "target_storage_id"]

log = logging.getLogger(__name__)


def target_storage_id(manifest: RepositoryManifest, *, storage_id: str | None, ignore_storage_id: bool) -> str:
    """The storage id to create the repository with: ``--storage-id``, else none with
    ``--ignore-storage-id`` (multi-store -> single store), else the manifest's."""
    if storage_id is not None:
        return storage_id
    return "" if ignore_storage_id else manifest.storage_id


def check_restorable(
    client: LakeFSClient, manifest: RepositoryManifest, *, storage_id: str = "", replacing: str | None = None
) -> None:
    """Raise RefsError unless ``manifest`` can be restored here as it stands; reads only.

    ``replacing`` names a repository that will be removed just before the restore (same-name migrations
    and promotions): its name and namespace do not count as taken.
    """
    where = f"lakeFS at {client.endpoint}"
    if manifest.name != replacing:
        try:
            client.get_repository(manifest.name)
        except LakeFSNotFound:
            pass
        else:
            raise RefsError(
                f"repository {manifest.name} already exists in {where}; delete it first (a repository deleted "
                "moments ago stays visible for a few seconds) or restore somewhere else"
            )
    ids = client.storage_ids()
    if storage_id not in ids:
        shown = ", ".join(repr(i) for i in ids)
        hint = (
            "; this lakeFS has a single blockstore: pass --ignore-storage-id"
            if ids == [""]
            else "; pass --storage-id with one of them"
        )
        raise RefsError(
            f"repository {manifest.name}: storage id {storage_id!r} is unknown to {where} (it knows {shown}){hint}"
        )
    try:
        check_namespace_free(
            manifest.storage_namespace, where=where, repositories=client.list_repositories(), ignore=replacing
        )
    except (NamespaceInUse, NamespaceOverlap) as exc:
        raise RefsError(f"repository {manifest.name}: {exc}; two repositories must never share a namespace") from exc


def restore_refs(
    client: LakeFSClient,
    repo: str,
    manifest: RepositoryManifest,
    *,
    force: bool = False,
    polling: TaskPolling = DEFAULT_POLLING,
) -> None:
    """Run lakeFS's refs restore of ``manifest``'s metaranges into the existing bare repository ``repo``."""
    lakefs_sdk = import_sdk()  # up to a second of imports: only where it is used, not in every Dagster run worker

    body = lakefs_sdk.RefsRestore(
        commits_meta_range_id=manifest.commits_meta_range_id,
        tags_meta_range_id=manifest.tags_meta_range_id,
        branches_meta_range_id=manifest.branches_meta_range_id,
        force=force,
    )
    task = client.call(f"submit refs restore into {repo}", client.repositories.restore_submit, repo, body, retry=False)
    status = wait_for_task(client, repo, task.id, "restore", polling)
    if status.error:
        detail = str(status.error)
        if detail == "No data" or "not found" in detail.lower():
            detail += (
                f" (the dump's metarange files are missing from {manifest.storage_namespace}/_lakefs/: copy the "
                "old namespace's data there first, e.g. with --copy-data)"
            )
        raise RefsError(f"refs restore into {repo} failed in lakeFS at {client.endpoint}: {detail}")


def restore_repository(
    client: LakeFSClient,
    manifest: RepositoryManifest,
    *,
    storage_id: str = "",
    read_only: bool = False,
    replacing: str | None = None,
    polling: TaskPolling = DEFAULT_POLLING,
) -> Repository:
    """Create ``manifest``'s repository bare on its namespace and restore its refs into it.

    Preconditions are checked first (``check_restorable``); if the restore itself fails, the new
    repository is deleted again and the error says why.
    """
    check_restorable(client, manifest, storage_id=storage_id, replacing=replacing)
    client.create_repository(
        manifest.name,
        manifest.storage_namespace,
        default_branch=manifest.default_branch,
        read_only=read_only,
        bare=True,
        storage_id=storage_id or None,
    )
    try:
        restore_refs(client, manifest.name, manifest, force=read_only, polling=polling)
    except (RefsError, LakeFSError) as exc:
        log.warning("restore of %s failed (%s); removing the bare repository again", manifest.name, exc)
        try:
            delete_repository_and_wait(client, manifest.name, force=True, polling=polling)
        except (RefsError, LakeFSError) as cleanup:
            raise RefsError(f"{exc}; removing the bare repository {manifest.name} also failed: {cleanup}") from exc
        raise
    return client.get_repository(manifest.name)
