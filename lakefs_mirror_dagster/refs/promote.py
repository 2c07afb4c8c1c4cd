"""``mirrors promote``: turn a read-only mirror into a writable repository in its region (disaster recovery).

lakeFS cannot flip a repository's read-only flag, but it can restore a refs dump into a new bare repository on
a namespace that already holds the data. So the mirror is fenced off, its refs dumped, its read-only record
replaced by a writable one restored from the dump, and the mirror forgotten; a crash part-way is resumed by
running the promotion again (steps in ``promote_mirror``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from ..lakefs import LakeFSClient, LakeFSError, LakeFSNotFound
from ..mirrors import Mirror, MirrorNotFound, MirrorState
from ..region import ReplicationService
from ..storage.uri import same_namespace
from .dump import dump_refs
from .errors import ManifestError, RefsError
from .manifest import RepositoryManifest, parse_manifest, write_manifest
from .restore import restore_repository
from .tasks import DEFAULT_POLLING, TaskPolling, delete_repository_and_wait

__all__ = ["PROMOTING", "PromotionResult", "pending_dump", "promote_mirror"]

log = logging.getLogger(__name__)

#: Start of the mirror's state message while a promotion is under way (followed by the dump's manifest).
PROMOTING = "promoting to a writable repository; refs dump: "


@dataclass(frozen=True)
class PromotionResult:
    """The promoted repository: its branches and tags (commit IDs), and the dump it was restored from."""

    name: str
    region: str
    storage_namespace: str
    branches: dict[str, str]
    tags: dict[str, str]
    manifest: RepositoryManifest
    manifest_path: Path | None = None
    resumed: bool = False


def _refs(client: LakeFSClient, repo: str) -> tuple[dict[str, str], dict[str, str]]:
    return (
        {r.id: r.commit_id for r in client.list_branches(repo)},
        {r.id: r.commit_id for r in client.list_tags(repo)},
    )


def pending_dump(mirror: Mirror, prefix: str = PROMOTING) -> RepositoryManifest | None:
    """The manifest a crashed promotion (or reversal: its ``prefix``) left in the mirror's message, if any."""
    if mirror.state != MirrorState.FAILED or not mirror.message.startswith(prefix):
        return None
    try:
        return parse_manifest(json.loads(mirror.message[len(prefix) :]), source=f"mirror {mirror.name} message")
    except (ValueError, ManifestError):
        return None


def promote_mirror(
    service: ReplicationService,
    name: str,
    *,
    manifest_dir: str | Path | None = None,
    polling: TaskPolling = DEFAULT_POLLING,
) -> PromotionResult:
    """Promote this region's mirror ``name`` to a writable repository.

    1. the mirror is marked ``failed`` with a "promoting" message, so no new sync pass or Dagster run touches it
       (both only work on pending/creating/active mirrors);
    2. its refs are dumped (lakeFS allows a dump of a read-only repository) and the dump's IDs are kept in the
       mirror's message, so a crash after step 3 can be resumed by running the promotion again;
    3. the read-only repository record is deleted (its data stays) and lakeFS is waited on to free the name;
    4. a writable bare repository with the same name, namespace and storage id is created and the refs restored
       into it (if this fails, the read-only repository is put back and the mirror re-activated);
    5. the mirror is removed from the mirrors database, so replication of it stops for good.
    """
    region = service.config.region
    try:
        mirror = service.mirror_named(name, region)
    except MirrorNotFound:
        raise RefsError(
            f"no mirror named {name!r} in region {region}; promote a mirror with the config of the region it lives in"
        ) from None
    if mirror.state in (MirrorState.DELETING, MirrorState.DELETED):
        raise RefsError(f"mirror {name} is {mirror.state.value}; it cannot be promoted")
    client = service.client(region)
    pending = pending_dump(mirror)
    try:
        repo = client.get_repository(name)
    except LakeFSNotFound:
        repo = None
    if repo is not None and not same_namespace(repo.storage_namespace, mirror.storage_namespace):
        raise RefsError(
            f"repository {name} in region {region} is on {repo.storage_namespace}, not on the mirror's namespace "
            f"{mirror.storage_namespace}: it is not this mirror's repository; nothing changed"
        )
    if repo is not None and not repo.read_only:
        if pending is None:
            raise RefsError(f"repository {name} in region {region} is already writable; nothing changed")
        return _finish(service, client, mirror, pending, None, resumed=True)  # crashed after the restore
    if repo is None and pending is None:
        raise RefsError(
            f"mirror {name} has no repository in region {region} yet (state {mirror.state.value}): nothing to promote"
        )

    path = None
    resumed = pending is not None
    if repo is not None:
        previous_state, previous_message = mirror.state, mirror.message
        mirror = service.mirrors.set_state(mirror.id, MirrorState.FAILED, PROMOTING, mirror.generation)
        try:
            before = _refs(client, name)
            manifest, _ = dump_refs(client, name, polling=polling)
            if _refs(client, name) != before:
                raise RefsError(f"mirror {name} moved while its refs were dumped (a sync pass was running); retry")
            path = write_manifest(manifest, manifest_dir) if manifest_dir is not None else None
            mirror = service.mirrors.set_state(
                mirror.id, MirrorState.FAILED, PROMOTING + json.dumps(manifest.to_json()), mirror.generation
            )
        except BaseException:
            service.mirrors.set_state(mirror.id, previous_state, previous_message, None)
            raise
        log.info("promoting mirror %s: deleting its read-only repository record (data stays)", name)
        delete_repository_and_wait(client, name, force=True, polling=polling)
    else:
        assert pending is not None
        manifest = pending
    try:
        restore_repository(client, manifest, storage_id=manifest.storage_id, read_only=False, polling=polling)
    except (RefsError, LakeFSError) as exc:
        _put_back_mirror(service, client, mirror, manifest, exc, polling)
        raise
    return _finish(service, client, mirror, manifest, path, resumed=resumed)


def _put_back_mirror(
    service: ReplicationService,
    client: LakeFSClient,
    mirror: Mirror,
    manifest: RepositoryManifest,
    cause: Exception,
    polling: TaskPolling,
) -> None:
    """After a failed restore: the read-only repository back from the same dump, the mirror active again."""
    try:
        restore_repository(client, manifest, storage_id=manifest.storage_id, read_only=True, polling=polling)
    except (RefsError, LakeFSError) as exc:
        raise RefsError(
            f"promotion of {mirror.name} failed ({cause}) and putting the read-only mirror back failed too ({exc}); "
            "its refs dump is kept in the mirror's message: run `mirrors promote` again to retry"
        ) from cause
    service.mirrors.set_state(mirror.id, MirrorState.ACTIVE, "", None)


def _finish(
    service: ReplicationService,
    client: LakeFSClient,
    mirror: Mirror,
    manifest: RepositoryManifest,
    path: Path | None,
    *,
    resumed: bool,
) -> PromotionResult:
    """Remove the mirror record (replication stops) and report the promoted repository's refs."""
    service.mirrors.delete_mirror(mirror.id)
    branches, tags = _refs(client, mirror.name)
    return PromotionResult(
        name=mirror.name,
        region=mirror.destination_region,
        storage_namespace=mirror.storage_namespace,
        branches=branches,
        tags=tags,
        manifest=manifest,
        manifest_path=path,
        resumed=resumed,
    )
