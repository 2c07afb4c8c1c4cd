"""Dump -> copy -> restore of one repository as one step with rollback, shared by the CLI and the job.

The order is chosen so a failure leaves the installation as it was: every precondition is checked before
the copy; the copy writes only into an empty namespace (and removes its files on failure); the source
repository, when the restore reuses its name, is removed only after the copy succeeded, and put back from
its own manifest if the restore then fails.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..config import ReplicationConfig
from ..lakefs import LakeFSClient, LakeFSError, Repository
from ..storage import StorageError, TransferSummary
from ..storage.uri import same_namespace
from .copy_data import CopyOutcome, copy_repository_data, remove_objects
from .errors import RefsError
from .manifest import RepositoryManifest
from .restore import check_restorable, restore_repository
from .tasks import DEFAULT_POLLING, TaskPolling, delete_repository_and_wait

__all__ = ["MigrationResult", "migrate_repository"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MigrationResult:
    """The repository as restored, the manifest it was restored from, and the copy's counts (if any)."""

    repository: Repository
    manifest: RepositoryManifest
    copy: TransferSummary | None = None


def migrate_repository(
    client: LakeFSClient,
    manifest: RepositoryManifest,
    *,
    config: ReplicationConfig | None = None,
    target_namespace: str | None = None,
    copy_data: bool = False,
    storage_id: str = "",
    replace_source: bool = False,
    source_read_only: bool = False,
    polling: TaskPolling = DEFAULT_POLLING,
) -> MigrationResult:
    """Restore ``manifest`` through ``client``, on ``target_namespace`` (copying the data there first when
    ``copy_data``), with ``storage_id``.

    ``replace_source``: the repository ``manifest.name`` still exists in this lakeFS (a same-installation
    migration); it is deleted (record only) after the copy and recreated from ``manifest`` on failure.
    """
    if copy_data and (config is None or not target_namespace):
        raise RefsError("--copy-data needs a target namespace (--to-namespace) and the replication config's stores")
    target = manifest.with_namespace(target_namespace) if target_namespace else manifest
    same_place = same_namespace(target.storage_namespace, manifest.storage_namespace)
    if replace_source and same_place and not copy_data and storage_id == manifest.storage_id:
        raise RefsError(f"repository {manifest.name}: restoring it onto itself would change nothing")
    replacing = manifest.name if replace_source else None
    check_restorable(client, target, storage_id=storage_id, replacing=replacing)
    outcome: CopyOutcome | None = None
    if copy_data:
        assert config is not None and target_namespace
        outcome = copy_repository_data(config, manifest, target_namespace, target_storage_id=storage_id)
    try:
        if replace_source:
            delete_repository_and_wait(client, manifest.name, force=True, polling=polling)
        try:
            repository = restore_repository(client, target, storage_id=storage_id, polling=polling)
        except (RefsError, LakeFSError) as exc:
            if replace_source:
                _put_back(client, manifest, source_read_only, polling, exc)
            raise
    except (RefsError, LakeFSError):
        if outcome is not None:
            try:
                remove_objects(outcome.destination, outcome.written)
            except StorageError as cleanup:
                log.error("removing the copied objects of %s failed: %s", manifest.name, cleanup)
        raise
    return MigrationResult(repository=repository, manifest=target, copy=outcome.summary if outcome else None)


def _put_back(
    client: LakeFSClient, manifest: RepositoryManifest, read_only: bool, polling: TaskPolling, cause: Exception
) -> None:
    """Recreate the source repository from its own dump after a failed restore elsewhere."""
    try:
        restore_repository(client, manifest, storage_id=manifest.storage_id, read_only=read_only, polling=polling)
    except (RefsError, LakeFSError) as exc:
        raise RefsError(
            f"{cause}; putting repository {manifest.name} back from its manifest also failed ({exc}): restore it "
            "by hand with `lakefs-mirror refs restore` from the manifest"
        ) from cause
    log.warning("restore of %s failed; the repository was put back on %s", manifest.name, manifest.storage_namespace)
