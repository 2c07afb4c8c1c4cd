"""Refs migration (lakeFS's ``lakefs-refs.py`` workflow) and promotion of mirrors to writable repositories.

``dump`` writes a repository's refs dump as a manifest, ``restore`` recreates a repository from one (bare
repository + lakeFS's refs restore), ``copy_data`` moves a namespace between configured stores, ``migrate``
chains them with rollback, and ``promote`` turns a read-only mirror into a writable repository.
"""

from .copy_data import CopyOutcome, copy_namespace, copy_repository_data, stores_for_copy
from .dump import DumpResult, dirty_branches, dump_refs, dump_repositories, dump_repository
from .errors import ManifestError, RefsError
from .manifest import RepositoryManifest, load_manifest, manifest_path, parse_manifest, write_manifest
from .migrate import MigrationResult, migrate_repository
from .promote import PromotionResult, promote_mirror
from .restore import check_restorable, restore_refs, restore_repository, target_storage_id
from .tasks import DEFAULT_POLLING, TaskPolling, delete_repository_and_wait, wait_for_task

__all__ = [
    "DEFAULT_POLLING",
    "CopyOutcome",
    "DumpResult",
    "ManifestError",
    "MigrationResult",
    "PromotionResult",
    "RefsError",
    "RepositoryManifest",
    "TaskPolling",
    "check_restorable",
    "copy_namespace",
    "copy_repository_data",
    "delete_repository_and_wait",
    "dirty_branches",
    "dump_refs",
    "dump_repositories",
    "dump_repository",
    "load_manifest",
    "manifest_path",
    "migrate_repository",
    "parse_manifest",
    "promote_mirror",
    "restore_refs",
    "restore_repository",
    "stores_for_copy",
    "target_storage_id",
    "wait_for_task",
    "write_manifest",
]
