"""One region's replication service: lakeFS clients, stores, the mirrors database, and engines per mirror.

Everything the CLI, the REST API and the Dagster resources need is built here once from the config, so
the three entry points cannot drift apart.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any

from ..config import ReplicationConfig, StoreConfig
from ..lakefs import LakeFSClient, LakeFSNotFound
from ..logs import log_fields
from ..mirrors import (
    InvalidMirrorSpec,
    Mirror,
    MirrorExists,
    MirrorNotFound,
    MirrorPage,
    MirrorsDatabase,
    MirrorsDatabaseUnavailable,
    MirrorState,
    open_mirrors_database,
)
from ..mirrors.inputs import mirror_row
from ..replication import (
    EnginePlugs,
    EngineSettings,
    MirrorEngine,
    MirrorSyncResult,
    ReplicationError,
    RepositorySource,
    SyncPass,
    SyncPassListener,
)
from ..replication.namespaces import check_namespace_free, is_mirror_repository
from ..replication.progress import ProgressListener
from ..replication.refstore import open_refstore
from ..storage import Blockstore, StoreSpec
from .branch_states import BranchStates
from .organization import join_organization
from .retry import RetrySchedule
from .scrub import Scrubber
from .storages import missing_stores

__all__ = ["LOG_ORDER_APPROXIMATE", "LOG_ORDER_EXACT", "RETIRING", "ReplicationService", "store_spec", "validation_key"]

#: What ``status`` and the API say of a mirror's log order (docs/log-order.md).
LOG_ORDER_EXACT = "exact"
LOG_ORDER_APPROXIMATE = (
    "log order of same-second commits may differ from the source: set refstore_database (docs/log-order.md)"
)

#: States of a mirror whose repository and record are to be removed (``ReplicationService.retire``).
RETIRING = (MirrorState.DELETING, MirrorState.DELETED)

log = logging.getLogger(__name__)


def validation_key(mirror: Mirror, *, strict: bool) -> str:
    """The mirror's key in the validated-ranges cache. Strict validation trusts no range that was validated
    leniently: it has cache entries of its own."""
    return mirror.validation_namespace + ("#strict" if strict else "")


def store_spec(config: ReplicationConfig, store: StoreConfig) -> StoreSpec:
    """What builds ``store``'s blockstore, here or in a Spark task: the typed store (credentials still
    ``Secret``) with the config's ``transfer`` multipart sizes."""
    t = config.transfer
    return StoreSpec(store, multipart_threshold=t.multipart_threshold, multipart_chunk_size=t.multipart_chunk_size)


class ReplicationService:
    """Builds and caches clients and stores; creates, lists and syncs the mirrors this region serves. ``plugs``
    chooses the transfer and validation plugs of every engine it builds (default: the in-process ones)."""

    def __init__(
        self, config: ReplicationConfig, *, mirrors: MirrorsDatabase | None = None, plugs: EnginePlugs | None = None
    ) -> None:
        self.config = config
        self.plugs = plugs
        opened = mirrors is None
        if mirrors is None:
            mirrors = open_mirrors_database(config.mirrors_database)
        try:
            join_organization(config, mirrors)  # a region with another secret key never starts
        except BaseException:
            if opened:
                mirrors.close()
            raise
        self.mirrors = mirrors
        self.retries = RetrySchedule(mirrors, config.validator)
        self.branch_states = BranchStates(mirrors, self.retries)
        self._clients: dict[str, LakeFSClient] = {}
        self._stores: dict[tuple[str, str], Blockstore] = {}
        self._progress: list[tuple[ProgressListener, float]] = []
        refstore = config.refstore_database
        #: Commit records go into this region's lakeFS database when configured (exact log order), else its API.
        self.refstore = open_refstore(refstore) if refstore is not None else None
        self._passes: list[SyncPassListener] = []

    @property
    def log_order(self) -> str:
        """``exact`` when commit records keep the source's sub-second times, else the note saying they may not."""
        return LOG_ORDER_EXACT if self.refstore is not None else LOG_ORDER_APPROXIMATE

    def on_synced(self, listener: SyncPassListener) -> None:
        """Every ``sync`` call that finishes from now on is handed to ``listener`` with its results and duration
        (``SyncPass``): how the metrics count passes, copies and errors without the engine knowing them."""
        self._passes.append(listener)

    def on_progress(self, listener: ProgressListener, *, every_s: float = 10.0) -> None:
        """Every engine this service builds from now on sends its progress to ``listener`` (``progress.py``)."""
        self._progress.append((listener, every_s))

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        if self.refstore is not None:
            self.refstore.close()
        self.mirrors.close()

    # ------------------------------------------------------------------ building blocks
    def client(self, region: str) -> LakeFSClient:
        """The replication user's client for ``region``'s lakeFS."""
        if region not in self._clients:
            key, secret = self.config.credentials_for(region)
            self._clients[region] = LakeFSClient(self.config.endpoint_for(region), key, secret)
        return self._clients[region]

    def _build_store(self, store: StoreConfig) -> Blockstore:
        return store_spec(self.config, store).build()

    def destination_store(self, storage_id: str = "") -> Blockstore:
        """This region's store for ``storage_id`` (``""``: the backward-compatible one)."""
        key = ("dst", storage_id)
        if key not in self._stores:
            self._stores[key] = self._build_store(self.config.store_by_id(storage_id))
        return self._stores[key]

    def source_store(self, region: str) -> Blockstore | None:
        """Direct access to ``region``'s storage when configured; None means: read through its lakeFS."""
        key = ("src", region)
        if key not in self._stores:
            store = self.config.source_store_for(region)
            if store is None:
                return None
            self._stores[key] = self._build_store(store)
        return self._stores[key]

    def engine_settings(self) -> EngineSettings:
        return EngineSettings.from_config(self.config)

    def ends(self, mirror: Mirror) -> tuple[RepositorySource, LakeFSClient, Blockstore]:
        """What ``mirror``'s engine and scrubber work on: its source repository, and its lakeFS and store in this
        region (the mirror's destination region; ``ReplicationError`` for a mirror of another region)."""
        if mirror.destination_region != self.config.region:
            raise ReplicationError(
                f"mirror {mirror.name} lives in region {mirror.destination_region}; this service is region "
                f"{self.config.region} and only syncs mirrors into its own region"
            )
        src, repo = self.client(mirror.source_region), mirror.source_repository
        store = self.source_store(mirror.source_region)
        # read from its store: the namespace is needed for every read; through lakeFS's API, never by a pass
        namespace = src.get_repository(repo).storage_namespace if store is not None else None
        source = RepositorySource(src, repo, namespace, store=store)
        return source, self.client(mirror.destination_region), self.destination_store(mirror.storage_id)

    def engine_for(self, mirror: Mirror, *, plugs: EnginePlugs | None = None) -> MirrorEngine:
        """The engine that replicates ``mirror``, its transfer and validation chosen by ``plugs`` (or the service's)."""
        source, destination, store = self.ends(mirror)
        choose = plugs or self.plugs
        engine = MirrorEngine(
            source=source,
            destination=destination,
            mirror_repo=mirror.name,
            destination_store=store,
            destination_storage_id=mirror.storage_id,
            destination_namespace=mirror.storage_namespace,
            validated=self.mirrors,
            validation_key=validation_key(mirror, strict=self.config.transfer.strict_full_addresses),
            settings=self.engine_settings(),
            plugs=functools.partial(choose, mirror) if choose is not None else None,
            recorder=functools.partial(self.branch_states.record_ref, mirror),
            in_flight=self.mirrors,
            mirror_id=mirror.id,
            refstore=self.refstore,
            started=functools.partial(self.branch_states.record_source_head, mirror),
            known_commit_times=self.branch_states.source_commit_times(mirror),
        )
        for listener, every_s in self._progress:
            engine.progress.listen(listener, every_s=every_s)
        return engine

    # ------------------------------------------------------------------ mirrors
    def create_mirror(
        self,
        *,
        source_repository: str,
        name: str,
        region: str,
        storage_namespace: str,
        storage_id: str = "",
        source_region: str | None = None,
        dry_run: bool = False,
    ) -> Mirror:
        """Record a new mirror after checking everything it needs; on any error nothing is written. With
        ``dry_run`` every check runs (the mirrors database's own too) and the mirror that would be recorded is
        returned, its id a fresh one, without writing anything.

        Checks: the destination region is known and reachable, the source repository exists, the mirror
        name is free there, the destination store exists, and no repository or mirror there uses the
        namespace, contains it or lies inside it (``check_namespace_free``).
        """
        source_region = source_region or self.config.region
        if region == source_region:
            raise ReplicationError(f"mirror region {region!r} is the source region; a mirror lives in another region")
        self.config.endpoint_for(region)  # unknown region -> ConfigError naming the known ones
        self.client(source_region).get_repository(source_repository)  # 404 -> LakeFSNotFound
        destination = self.client(region)
        try:
            destination.get_repository(name)
            raise ReplicationError(f"a repository named {name!r} already exists in region {region}")
        except LakeFSNotFound:
            pass
        if region == self.config.region:
            self.config.store_by_id(storage_id)
        known = destination.storage_ids()
        if storage_id not in known:  # accepted now, the region's every sync would fail on it
            raise InvalidMirrorSpec(
                f"storage_id {storage_id!r} is not a store of region {region}'s lakeFS; it has "
                + ", ".join(repr(i) for i in known)
                + (" (a single blockstore: leave storage_id empty)" if known == [""] else "")
            )
        check_namespace_free(
            storage_namespace,
            where=f"region {region}",
            repositories=destination.list_repositories(page_size=self.config.list_repositories_page_size),
            # every organisation's mirrors: a namespace is storage, whoever's mirror writes to it
            mirrors=(m for m in self.mirrors.iter_mirrors(destination_region=region) if m.storage_id == storage_id),
        )
        spec: dict[str, Any] = {
            "organization_id": self.config.organization_id,
            "source_region": source_region,
            "source_repository": source_repository,
            "name": name,
            "destination_region": region,
            "storage_namespace": storage_namespace,
            "storage_id": storage_id,
        }
        if dry_run:
            return self._planned_mirror(spec)
        return self.mirrors.create_mirror(**spec)

    def _planned_mirror(self, spec: dict[str, Any]) -> Mirror:
        """The mirror ``create_mirror`` would record: its fields checked as the database checks them, its name
        free in its region (``MirrorExists`` otherwise)."""
        row = mirror_row(**spec, mirror_id=None, state=MirrorState.PENDING, message="")
        try:
            taken = self.mirrors.get_by_name(spec["destination_region"], spec["name"])
        except MirrorNotFound:
            return Mirror(**{**row, "state": MirrorState.PENDING})
        raise MirrorExists(f"a mirror named {taken.name!r} already exists in region {taken.destination_region}")

    def fail_storeless_mirrors(self, mirrors: Iterable[Mirror] | None = None) -> dict[str, str]:
        """Put every mirror of this region whose store is not configured into state ``failed`` with the
        reason (once); returns mirror ID -> reason. The region goes on with its other mirrors."""
        missing = missing_stores(self.config, self.my_mirrors() if mirrors is None else mirrors)
        for mirror_id, reason in missing.items():
            mirror = self.get_mirror(mirror_id)
            if mirror.state != MirrorState.FAILED or mirror.message != reason:
                log.error("mirror %s: %s", mirror.name, reason, extra=self._fields(mirror))
                self.mirrors.set_state(mirror_id, MirrorState.FAILED, reason, None)
        return missing

    # Reads of mirrors go through these: a region sees only its organisation's mirrors, however many
    # organisations share the database (organization.py).
    def get_mirror(self, mirror_id: str) -> Mirror:
        """The mirror with this id in this organisation; ``MirrorNotFound`` otherwise."""
        mirror = self.mirrors.get_mirror(mirror_id)
        if mirror.organization_id != self.config.organization_id:
            raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
        return mirror

    def mirror_named(self, name: str, region: str | None = None) -> Mirror:
        """This organisation's mirror ``name`` in ``region`` (default: this one); ``MirrorNotFound`` otherwise."""
        region = region or self.config.region
        mirror = self.mirrors.get_by_name(region, name)
        if mirror.organization_id != self.config.organization_id:
            raise MirrorNotFound(f"no mirror named {name!r} in region {region!r}")
        return mirror

    def list_mirrors(self, **filters: Any) -> MirrorPage:
        """``MirrorsDatabase.list_mirrors`` within this organisation."""
        return self.mirrors.list_mirrors(organization_id=self.config.organization_id, **filters)

    def iter_mirrors(self, **filters: Any) -> Iterator[Mirror]:
        """``MirrorsDatabase.iter_mirrors`` within this organisation."""
        return self.mirrors.iter_mirrors(organization_id=self.config.organization_id, **filters)

    def my_mirrors(self, *, name: str | None = None) -> Iterator[Mirror]:
        """This organisation's mirrors whose destination is this region (optionally only the one called ``name``)."""
        mine = self.iter_mirrors(destination_region=self.config.region, page_size=self.config.list_mirrors_page_size)
        for mirror in mine:
            if name is None or mirror.name == name:
                yield mirror

    def activate(self, mirror: Mirror) -> Mirror:
        """Create the read-only mirror repository (idempotent) and mark the mirror active."""
        if mirror.state == MirrorState.ACTIVE:
            return mirror
        try:
            self.engine_for(mirror).ensure_mirror_repository()
        except Exception as exc:
            self.mirrors.set_state(mirror.id, MirrorState.FAILED, f"{type(exc).__name__}: {exc}", None)
            raise
        log.info("mirror %s is active (was %s)", mirror.name, mirror.state, extra=self._fields(mirror))
        return self.mirrors.set_state(mirror.id, MirrorState.ACTIVE, "", None)

    def retire(self, mirror: Mirror) -> None:
        """Finish deleting a mirror: remove its repository (force) in this region, then its record. A
        repository of that name that is writable or on another namespace is someone else's: refused, kept."""
        client = self.client(mirror.destination_region)
        try:
            repo = client.get_repository(mirror.name)
        except LakeFSNotFound:
            repo = None
        if repo is not None:
            if not is_mirror_repository(repo, mirror.storage_namespace):
                raise ReplicationError(f"repository {mirror.name} is not this mirror's; not deleting it")
            client.delete_repository(mirror.name, force=True)
        self.mirrors.delete_mirror(mirror.id)
        queued = self.mirrors.wakeups(mirror.destination_region)  # hooks' wake-ups of it: nobody reads them now
        self.mirrors.ack_wakeups(w for w in queued if w.mirror_id == mirror.id)

    def scrubber(self, name: str) -> Scrubber:
        """The scrubber of this region's mirror ``name`` (``scrub.py``); ``MirrorNotFound`` otherwise."""
        mirror = self.mirror_named(name)
        (source, destination, store), settings = self.ends(mirror), self.engine_settings()
        return Scrubber(
            mirror_repo=mirror.name,
            destination=destination,
            destination_store=store,
            destination_namespace=mirror.storage_namespace,
            source=source,
            concurrency=settings.concurrency,
            max_bytes_in_flight=settings.max_bytes_in_flight,
            page_size=settings.list_page_size,
        )

    def sync(
        self,
        *,
        name: str | None = None,
        branches: list[str] | None = None,
        due_only: bool = False,
        tags: bool | None = None,
    ) -> list[MirrorSyncResult]:
        """One pass over this region's mirrors: retire deleted ones, (re)activate pending and failed ones and
        sync them with the active ones, record branch states. A mirror whose store is gone is reported. A
        blocked branch still in its cooldown (``retry.py``) is not tried: it is reported ``deferred``.

        ``due_only``: a retry pass (``validator.run_interval``): only the blocked branches of active mirrors
        whose cooldown has ended; mirrors without any are left out of the results. ``tags``: whether the tags
        are synced too (default: only when no branches are named)."""
        started = time.monotonic()
        mine = list(self.my_mirrors())  # one listing serves the store check and the pass
        storeless = self.fail_storeless_mirrors(mine)
        results = []
        for mirror in mine:
            if name is not None and mirror.name != name:
                continue
            wanted = branches
            if due_only:
                if mirror.state != MirrorState.ACTIVE or mirror.id in storeless:
                    continue
                wanted = [b for b in self.retries.due_branches(mirror) if not branches or b in branches]
                if not wanted:
                    continue
            if mirror.id in storeless:
                results.append(_not_synced(mirror, storeless[mirror.id]))
                continue
            try:  # one mirror that cannot be synced (source gone, region down, ...) never stops the others
                if mirror.state in RETIRING:
                    self.retire(mirror)
                    log.info("mirror %s deleted (repository and record)", mirror.name, extra=self._fields(mirror))
                    continue
                mirror = self.activate(mirror)
                result = self.engine_for(mirror).sync(branches=wanted, gate=self.retries.gate(mirror), tags=tags)
            except MirrorsDatabaseUnavailable:
                raise  # the pass cannot go on without the database: the caller reports it once
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                log.error("mirror %s not synced in this pass: %s", mirror.name, error, extra=self._fields(mirror))
                log.debug("mirror %s not synced", mirror.name, exc_info=True, extra=self._fields(mirror))
                result = _not_synced(mirror, error)
            results.append(result)
        kind = "retry" if due_only else "full" if branches is None else "refs"
        done = SyncPass(kind, results, time.monotonic() - started)
        for listener in self._passes:
            try:
                listener(done)
            except Exception:  # a listener's bug never fails the pass
                log.exception("a sync pass listener failed")
        return results

    def _fields(self, mirror: Mirror) -> dict[str, str]:
        """The context of a log record about ``mirror``."""
        return log_fields(region=self.config.region, mirror=mirror.name, repository=mirror.source_repository)


def _not_synced(mirror: Mirror, error: str) -> MirrorSyncResult:
    """The result of a mirror the pass could not sync at all, and why."""
    return MirrorSyncResult(mirror=mirror.name, source_repository=mirror.source_repository, error=error)
