"""``refs dump``: lakeFS's refs dump of a repository, written as a manifest (and optionally the repository
record removed afterwards).

lakeFS dumps only committed state: uncommitted (staged) changes are not in the dump and would be lost by a
restore. So a dump refuses dirty branches unless asked to commit them first (``commit_dirty``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..lakefs import LakeFSClient
from .errors import RefsError
from .manifest import RepositoryManifest, write_manifest
from .tasks import DEFAULT_POLLING, TaskPolling, delete_repository_and_wait, wait_for_task

__all__ = [
    "COMMIT_MESSAGE",
    "DumpResult",
    "dirty_branches",
    "dump_refs",
    "dump_repositories",
    "dump_repository",
    "repositories_for_all",
]

log = logging.getLogger(__name__)

COMMIT_MESSAGE = "lakefs-mirror refs dump: commit uncommitted changes before dumping"


@dataclass(frozen=True)
class DumpResult:
    """One dumped repository: its manifest, where it was written, what was committed and removed."""

    manifest: RepositoryManifest
    path: Path | None
    committed: tuple[str, ...] = ()
    removed: bool = False


def dirty_branches(client: LakeFSClient, repo: str) -> list[str]:
    """Branches of ``repo`` with uncommitted changes (one diff entry is enough to know)."""
    dirty = []
    for branch in client.list_branches(repo):
        diff = client.call(
            f"diff of uncommitted changes on {repo}/{branch.id}", client.branches.diff_branch, repo, branch.id, amount=1
        )
        if diff.results:
            dirty.append(branch.id)
    return dirty


def dump_refs(
    client: LakeFSClient, repo: str, *, commit_dirty: bool = False, polling: TaskPolling = DEFAULT_POLLING
) -> tuple[RepositoryManifest, tuple[str, ...]]:
    """Run lakeFS's refs dump of ``repo``; returns the manifest and the branches committed first.

    The dump writes its three metaranges (commits, branches, tags) into ``<namespace>/_lakefs/``, so the
    namespace's data must travel with the manifest.
    """
    info = client.get_repository(repo)
    dirty = dirty_branches(client, repo)
    if dirty and not commit_dirty:
        raise RefsError(
            f"repository {repo}: branch(es) {', '.join(sorted(dirty))} have uncommitted changes, which a refs "
            "dump does not contain; commit them (or pass --commit) and dump again"
        )
    for branch in dirty:
        log.info("committing uncommitted changes on %s/%s before the dump", repo, branch)
        client.commit(repo, branch, COMMIT_MESSAGE, force=info.read_only)
    task = client.call(f"submit refs dump of {repo}", client.repositories.dump_submit, repo, retry=False)
    status = wait_for_task(client, repo, task.id, "dump", polling)
    if status.error or status.refs is None:
        raise RefsError(f"refs dump of {repo} failed in lakeFS at {client.endpoint}: {status.error or 'no refs'}")
    manifest = RepositoryManifest(
        name=info.id,
        storage_namespace=info.storage_namespace,
        default_branch=info.default_branch,
        storage_id=info.storage_id,
        commits_meta_range_id=status.refs.commits_meta_range_id,
        tags_meta_range_id=status.refs.tags_meta_range_id,
        branches_meta_range_id=status.refs.branches_meta_range_id,
    )
    return manifest, tuple(dirty)


def dump_repository(
    client: LakeFSClient,
    repo: str,
    output_dir: str | Path | None,
    *,
    commit_dirty: bool = False,
    remove: bool = False,
    polling: TaskPolling = DEFAULT_POLLING,
) -> DumpResult:
    """Dump ``repo``, write ``<output_dir>/<repo>_manifest.json``, then (``remove``) delete the repository
    record, keeping its data. The record is deleted only after the manifest is safely on disk."""
    if remove and output_dir is None:
        raise RefsError(f"repository {repo}: refusing to remove it without writing its manifest first")
    manifest, committed = dump_refs(client, repo, commit_dirty=commit_dirty, polling=polling)
    path = write_manifest(manifest, output_dir) if output_dir is not None else None
    if remove:
        read_only = client.get_repository(repo).read_only
        delete_repository_and_wait(client, repo, force=read_only, polling=polling)
    return DumpResult(manifest=manifest, path=path, committed=committed, removed=remove)


def repositories_for_all(client: LakeFSClient) -> tuple[list[str], list[str]]:
    """What ``--all`` dumps: every writable repository; and what it leaves out: the read-only ones.

    Read-only repositories are mirrors (or repositories someone froze): committing their dirty branches or
    removing them would break the mirror, and a mirror is rebuilt from its source anyway. Name one
    explicitly to dump it.
    """
    writable: list[str] = []
    read_only: list[str] = []
    for repo in client.list_repositories():
        (read_only if repo.read_only else writable).append(repo.id)
    return writable, read_only


def dump_repositories(
    client: LakeFSClient,
    repos: Iterable[str] | None,
    output_dir: str | Path,
    *,
    commit_dirty: bool = False,
    remove: bool = False,
    polling: TaskPolling = DEFAULT_POLLING,
) -> list[DumpResult]:
    """Dump each of ``repos`` (None: every writable repository), stopping at the first failure.

    All named repositories are checked to exist before the first dump, so a typo fails before anything
    is committed or removed.
    """
    names = repositories_for_all(client)[0] if repos is None else list(dict.fromkeys(repos))
    if not names:
        raise RefsError(f"no writable repositories to dump in lakeFS at {client.endpoint}")
    for name in names:
        client.get_repository(name)  # LakeFSNotFound names the missing one
    return [
        dump_repository(client, name, output_dir, commit_dirty=commit_dirty, remove=remove, polling=polling)
        for name in names
    ]
