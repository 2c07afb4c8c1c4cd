"""``mirrors reverse``: failback. The recovered old source becomes a mirror of the repository promoted in its place.

After a failover (``mirrors promote`` made region B's mirror ``P`` writable), region A comes back with its old
repository ``S``. Reversing, run with A's config, turns ``S`` into a read-only mirror of ``P`` without copying
what ``S`` already holds: commit IDs are equal in both regions, so the next sync copies only what B wrote since
the failover (steps in ``reverse_mirror``). Switching back later is ``mirrors promote S`` in A, then
``mirrors reverse P --source-region A --source-repository S`` in B.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from ..lakefs import LakeFSClient, LakeFSNotFound
from ..mirrors import Mirror, MirrorNotFound, MirrorState
from ..region import ReplicationService
from ..replication.namespaces import check_namespace_free
from ..replication.planner import CommitPlanner
from .dump import dump_refs
from .errors import RefsError
from .manifest import RepositoryManifest, write_manifest
from .promote import pending_dump
from .restore import restore_repository
from .tasks import DEFAULT_POLLING, TaskPolling, delete_repository_and_wait

__all__ = ["REVERSING", "ReversalResult", "diverged_branches", "reverse_mirror"]

log = logging.getLogger(__name__)

#: Start of the mirror's state message while a reversal is under way (followed by the dump's manifest).
REVERSING = "reversing: the old source becomes this mirror; refs dump: "


@dataclass(frozen=True)
class ReversalResult:
    """The new mirror, the refs it started from, and what it has that its new source lacks."""

    mirror: Mirror
    branches: dict[str, str]
    diverged: dict[str, str] = field(default_factory=dict)
    manifest_path: Path | None = None
    resumed: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "mirror": self.mirror.as_dict(),
            "branches": self.branches,
            "diverged": self.diverged,
            "manifest_path": str(self.manifest_path) if self.manifest_path else None,
            "resumed": self.resumed,
        }


def diverged_branches(
    old: LakeFSClient, old_repo: str, new: LakeFSClient, new_repo: str, *, page_size: int = 1000
) -> dict[str, str]:
    """Branches of ``old_repo`` holding commits ``new_repo`` lacks: name -> why (mirroring would move or delete
    them, and their newest commits would be reachable by ID only)."""
    new_heads = {r.id: r.commit_id for r in new.list_branches(new_repo, page_size=page_size)}
    history = CommitPlanner(new, new_repo, old, old_repo)  # ancestry in the new source's history
    found: dict[str, str] = {}
    for ref in old.list_branches(old_repo, page_size=page_size):
        head = new_heads.get(ref.id)
        if head is None:
            found[ref.id] = f"only in the old source, at {ref.commit_id}"
        elif ref.commit_id != head and not _is_ancestor(history, ref.commit_id, head):
            found[ref.id] = f"at {ref.commit_id}, which the new source's {ref.id} ({head}) does not contain"
    return found


def _is_ancestor(history: CommitPlanner, old: str, new: str) -> bool:
    try:
        return history.is_ancestor(old, new)
    except LakeFSNotFound:
        return False


def reverse_mirror(
    service: ReplicationService,
    name: str,
    *,
    source_region: str,
    source_repository: str,
    allow_diverged: bool = False,
    manifest_dir: str | Path | None = None,
    polling: TaskPolling = DEFAULT_POLLING,
) -> ReversalResult:
    """Make repository ``name`` (``S``) of this region a read-only mirror of ``source_repository`` (``P``) in
    ``source_region``. Raises ``RefsError`` naming what is wrong; nothing is changed then.

    1. checks, changing nothing: ``S`` is writable here, ``P`` writable at the source, and no branch of ``S``
       holds commits ``P`` lacks unless ``allow_diverged`` (those commits then stay readable by ID here);
    2. records the mirror ``S`` (source ``P``) as ``failed`` with a "reversing" message holding ``S``'s refs
       dump, so a crash in the next two steps is resumed by running ``reverse`` again;
    3. deletes ``S``'s repository record (the data stays) and restores the dump into a **read-only** bare
       repository of the same name on the same namespace, every commit under the same ID;
    4. marks the mirror active.
    """
    region = service.config.region
    if source_region == region:
        raise RefsError(f"the new source must be in another region than {region}")
    client, source = service.client(region), service.client(source_region)
    try:
        existing = service.mirror_named(name, region)
    except MirrorNotFound:
        existing = None
    pending = pending_dump(existing, REVERSING) if existing is not None else None
    if existing is not None and pending is None:
        raise RefsError(f"region {region} already has a mirror named {name} (state {existing.state.value})")
    source_info = source.get_repository(source_repository)
    if source_info.read_only:
        raise RefsError(
            f"{source_repository} in region {source_region} is read-only (a mirror): promote it first "
            f"(`mirrors promote {source_repository}` with region {source_region}'s config)"
        )
    if pending is not None and existing is not None:
        return _resume(service, client, existing, pending, polling)

    try:
        repo = client.get_repository(name)
    except LakeFSNotFound:
        raise RefsError(f"no repository {name} in region {region} to turn into a mirror") from None
    if repo.read_only:
        raise RefsError(f"repository {name} in region {region} is already read-only; nothing changed")
    diverged = diverged_branches(
        client, name, source, source_repository, page_size=service.config.commit_sensor.list_branch_page_size
    )
    if diverged and not allow_diverged:
        listed = "; ".join(f"{b}: {why}" for b, why in sorted(diverged.items())[:10])
        raise RefsError(
            f"{name} in region {region} has commits {source_repository} in {source_region} lacks ({listed}); "
            "bring them over first (e.g. merge them at the new source), or pass --allow-diverged: the mirror "
            "then follows the new source and those commits stay readable here by ID only; nothing changed"
        )
    check_namespace_free(
        repo.storage_namespace,
        where=f"region {region}",
        repositories=client.list_repositories(page_size=service.config.list_repositories_page_size),
        mirrors=(m for m in service.mirrors.iter_mirrors(destination_region=region) if m.storage_id == repo.storage_id),
        ignore=name,
    )
    manifest, _ = dump_refs(client, name, polling=polling)  # refuses uncommitted changes: they would be lost
    path = write_manifest(manifest, manifest_dir) if manifest_dir is not None else None
    mirror = service.mirrors.create_mirror(
        organization_id=service.config.organization_id,
        source_region=source_region,
        source_repository=source_repository,
        name=name,
        destination_region=region,
        storage_namespace=repo.storage_namespace,
        storage_id=repo.storage_id,
        state=MirrorState.FAILED,
        message=REVERSING + json.dumps(manifest.to_json()),
    )
    log.info("reversing %s: its repository record is replaced by a read-only one (data stays)", name)
    delete_repository_and_wait(client, name, force=True, polling=polling)
    result = _resume(service, client, mirror, manifest, polling)
    return ReversalResult(result.mirror, result.branches, diverged, path, resumed=False)


def _resume(
    service: ReplicationService,
    client: LakeFSClient,
    mirror: Mirror,
    manifest: RepositoryManifest,
    polling: TaskPolling,
) -> ReversalResult:
    """Steps 3 and 4: the read-only repository from the dump (unless already there), then the mirror active."""
    try:
        current = client.get_repository(mirror.name)
    except LakeFSNotFound:
        current = None
    if current is None:
        restore_repository(client, manifest, storage_id=manifest.storage_id, read_only=True, polling=polling)
    elif not current.read_only:  # the crash came before the record was deleted
        delete_repository_and_wait(client, mirror.name, force=True, polling=polling)
        restore_repository(client, manifest, storage_id=manifest.storage_id, read_only=True, polling=polling)
    active = service.mirrors.set_state(mirror.id, MirrorState.ACTIVE, "", None)
    branches = {r.id: r.commit_id for r in client.list_branches(mirror.name)}
    return ReversalResult(active, branches, resumed=True)
