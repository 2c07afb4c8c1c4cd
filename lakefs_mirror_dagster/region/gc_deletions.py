"""Garbage-collection deletions: what lakeFS GC deleted from a source's namespace is deleted from its mirror's.

A mirror copies objects under the same relative address, so an object the mirror has and the source no longer
has is one GC deleted. A pass merges key-ordered listings of both namespaces in pages (bounded memory) and never
touches ``_lakefs/``. An object goes only when first seen missing at least the grace period ago (``gc_marks``),
missing in this pass, and still absent at a HEAD right before the delete. Once anything is deleted the
validated-ranges cache of the mirror is dropped, so a later sync checks a range again before trusting it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any, Protocol

from ..logs import log_fields
from ..mirrors import Mirror, MirrorsDatabaseError, MirrorState
from ..replication import ReplicationError, SourceReader, ValidatedCache
from ..replication.namespaces import check_namespace_free, is_mirror_repository
from ..replication.validation import METADATA_PREFIX
from ..storage import Blockstore, fixed_workers, join_namespace, relative_to_namespace
from ..storage.uri import namespace_prefix

if TYPE_CHECKING:
    from .service import ReplicationService

__all__ = ["MAX_LISTED", "GcResult", "GcSettings", "MissingMarks", "mirror_gc_deletions", "run_gc_deletions"]

log = logging.getLogger(__name__)

#: Addresses a result lists (deleted, or would be in a dry run); the counts are always complete.
MAX_LISTED = 1000


class MissingMarks(Protocol):
    """When each object of a mirror was first seen missing at its source (every ``MirrorsDatabase`` implements it)."""

    def note_missing(self, mirror_id: str, addresses: Iterable[str], now: datetime) -> Mapping[str, datetime]: ...

    def missing_since(self, mirror_id: str, addresses: Iterable[str]) -> Mapping[str, datetime]: ...

    def forget_missing(self, mirror_id: str, addresses: Iterable[str]) -> int: ...

    def sweep_missing(self, mirror_id: str, not_seen_since: datetime) -> int: ...


@dataclass(frozen=True)
class GcSettings:
    """How one pass runs: the grace period, a dry run (nothing written), page size and parallel HEAD/deletes."""

    grace_period: timedelta
    dry_run: bool = False
    page_size: int = 1000
    concurrency: int = 16


@dataclass
class GcResult:
    """What one pass did for one mirror (in a dry run: what it would have deleted; nothing was written)."""

    mirror: str
    source_repository: str
    dry_run: bool = False
    #: Data objects of the mirror's namespace looked at, and how many of them the source's namespace lacks.
    listed: int = 0
    missing: int = 0
    #: Missing ones seen missing for the first time now: their grace period starts with this pass.
    newly_missing: int = 0
    #: Missing ones still within their grace period (the newly missing included).
    waiting: int = 0
    deleted: int = 0
    bytes_deleted: int = 0
    #: Past their grace period, but the source had them again on the re-check: kept, and their marks dropped.
    back_at_source: int = 0
    #: Marks dropped because a complete pass no longer saw the object missing.
    unmarked: int = 0
    #: Validated-ranges cache entries of the mirror dropped because objects were deleted.
    validated_forgotten: int = 0
    addresses: list[str] = field(default_factory=list)
    #: Why the mirror was not looked at (not active), which is not an error.
    skipped: str | None = None
    error: str | None = None
    duration_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _database_down(exc: BaseException) -> bool:
    """The mirrors database failed (down, or busy beyond its retries): the store raises exactly
    ``MirrorsDatabaseError`` then. Its subclasses (a namespace overlap, an invalid address) are one mirror's."""
    return type(exc) is MirrorsDatabaseError


def _utc_now() -> datetime:
    return datetime.now(UTC)


def mirror_gc_deletions(
    *,
    mirror_id: str,
    mirror_name: str,
    source: SourceReader,
    destination: Blockstore,
    destination_namespace: str,
    marks: MissingMarks,
    validated: ValidatedCache,
    validation_keys: Sequence[str],
    settings: GcSettings,
    now: Callable[[], datetime] = _utc_now,
) -> GcResult:
    """One pass for one mirror: mark, and after the grace period delete, the mirror's data objects that the
    source's namespace no longer has. Never raises for a storage or lakeFS failure of this mirror: the result's
    ``error`` says what failed (what was deleted before it is counted). A mirrors-database failure is raised."""
    started, clock = now(), time.monotonic()
    result = GcResult(mirror=mirror_name, source_repository=source.repository, dry_run=settings.dry_run)
    forget = _CacheForgetter(validated, validation_keys, result)
    try:
        run = _Pass(mirror_id, source, _source_store(source), destination, destination_namespace, marks, settings, now)
        pairs = _missing_at_source(
            _data_objects(destination, destination_namespace, result),
            (address for address, _ in _data_objects(run.src_store, source.storage_namespace)),
        )
        while page := list(islice(pairs, settings.page_size)):
            run.page(page, result, forget)
        if not settings.dry_run:  # only a complete pass knows which marks it no longer saw
            result.unmarked += marks.sweep_missing(mirror_id, started)
    except Exception as exc:
        if _database_down(exc):
            raise
        result.error = f"{type(exc).__name__}: {exc}"
        log.error(
            "garbage-collection deletions of %s failed: %s",
            mirror_name,
            result.error,
            extra=log_fields(mirror=mirror_name, repository=source.repository),
        )
    finally:
        if result.deleted and not settings.dry_run:
            forget.after_deleting()
        result.duration_seconds = time.monotonic() - clock
    return result


class _CacheForgetter:
    """Drops the mirror's validated-ranges entries: ``before_deleting`` once, before the first delete of a pass
    (a crash after it never leaves a range trusted), and ``after_deleting`` at its end (a sync that validated a
    range meanwhile may have trusted an object deleted since)."""

    def __init__(self, validated: ValidatedCache, keys: Sequence[str], result: GcResult) -> None:
        self.validated, self.keys, self.result = validated, keys, result
        self.armed = False

    def before_deleting(self) -> None:
        if not self.armed:
            self.armed = True
            self.after_deleting()

    def after_deleting(self) -> None:
        self.result.validated_forgotten += sum(self.validated.forget_validated(k) for k in self.keys)


def _source_store(source: SourceReader) -> Blockstore:
    """The source's store, refused unless it holds lakeFS metadata: a wrong namespace or store would look like
    one from which GC deleted everything."""
    if source.store is None:
        raise ReplicationError(
            f"garbage-collection deletions of {source.repository} need direct read access to its storage "
            "(source_stores in the config): lakeFS's API does not list a namespace"
        )
    metadata = source.namespace_uri(METADATA_PREFIX)
    if next(iter(source.store.list_prefix(metadata)), None) is None:
        raise ReplicationError(
            f"the source namespace {source.storage_namespace} of {source.repository} holds no lakeFS metadata "
            f"({metadata}) in {source.store.describe()}: wrong store or namespace? Nothing was deleted"
        )
    return source.store


def _data_objects(store: Blockstore, namespace: str, result: GcResult | None = None) -> Iterator[tuple[str, int]]:
    """(relative address, size) of every object of ``namespace`` outside ``_lakefs/``, in key order; a listing
    that goes backwards stops the pass (a merge of unordered listings would misjudge)."""
    previous = ""
    for info in store.list_prefix(namespace_prefix(namespace)):
        address = relative_to_namespace(namespace, info.uri)
        if address is None:
            continue
        if address <= previous:
            raise ReplicationError(
                f"{store.describe()} listed {namespace} out of key order ({address!r} after "
                f"{previous!r}); nothing more is deleted in this pass"
            )
        previous = address
        if address.startswith(METADATA_PREFIX):
            continue
        if result is not None:
            result.listed += 1
        yield address, info.size


def _missing_at_source(mirror: Iterator[tuple[str, int]], source: Iterator[str]) -> Iterator[tuple[str, int]]:
    """The mirror's objects the source listing lacks: a merge of two listings in key order."""
    current = next(source, None)
    for address, size in mirror:
        while current is not None and current < address:
            current = next(source, None)
        if current != address:
            yield address, size


@dataclass(frozen=True)
class _Pass:
    """What every page of one mirror's pass works with."""

    mirror_id: str
    source: SourceReader
    src_store: Blockstore
    destination: Blockstore
    destination_namespace: str
    marks: MissingMarks
    settings: GcSettings
    now: Callable[[], datetime]

    def page(self, page: list[tuple[str, int]], result: GcResult, forget: _CacheForgetter) -> None:
        """Mark one page of missing objects; delete those past their grace period that the source still lacks."""
        sizes = dict(page)
        seen, dry_run = self.now(), self.settings.dry_run
        # A dry run only reads the marks: grace periods start with the first pass that writes them.
        marks, mirror_id = self.marks, self.mirror_id
        firsts = marks.missing_since(mirror_id, sizes) if dry_run else marks.note_missing(mirror_id, sizes, seen)
        due = [a for a in sizes if a in firsts and seen - firsts[a] >= self.settings.grace_period]
        result.missing += len(sizes)
        result.newly_missing += sum(1 for a in sizes if firsts.get(a, seen) >= seen)
        result.waiting += len(sizes) - len(due)
        if not due:
            return
        if not dry_run:
            forget.before_deleting()
        workers = max(1, min(self.settings.concurrency, len(due)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gc") as pool:
            gone = dict(zip(due, pool.map(self._delete_if_gone, due), strict=True))
        deleted = [a for a in due if gone[a]]
        result.deleted += len(deleted)
        result.bytes_deleted += sum(sizes[a] for a in deleted)
        result.back_at_source += len(due) - len(deleted)
        result.addresses.extend(deleted[: MAX_LISTED - len(result.addresses)])
        if not dry_run:
            marks.forget_missing(mirror_id, due)

    def _delete_if_gone(self, address: str) -> bool:
        """A HEAD at the source right before the delete: an object it has (again) is kept."""
        if self.src_store.stat(self.source.namespace_uri(address)) is not None:
            return False
        if not self.settings.dry_run:
            self.destination.delete(join_namespace(self.destination_namespace, address))
        return True


def run_gc_deletions(
    service: ReplicationService,
    *,
    name: str | None = None,
    dry_run: bool = False,
    now: Callable[[], datetime] = _utc_now,
) -> list[GcResult]:
    """One pass over this region's mirrors (or the one called ``name``). Only active mirrors are looked at (the
    others are listed as skipped); a mirror that fails is reported and the others go on."""
    config = service.config
    settings = GcSettings(
        grace_period=config.garbage_collection.grace_period,
        dry_run=dry_run,
        concurrency=fixed_workers(config.transfer.concurrency),
    )
    results = []
    for mirror in service.my_mirrors(name=name):
        if mirror.state != MirrorState.ACTIVE:
            result = GcResult(
                mirror.name, mirror.source_repository, dry_run=dry_run, skipped=f"mirror is {mirror.state}"
            )
        else:
            try:
                result = _one_mirror(service, mirror, settings, now)
            except Exception as exc:
                if _database_down(exc):
                    raise  # the pass cannot go on without the database: the caller reports it once
                result = GcResult(
                    mirror.name, mirror.source_repository, dry_run=dry_run, error=f"{type(exc).__name__}: {exc}"
                )
                log.error(
                    "garbage-collection deletions of %s not run: %s",
                    mirror.name,
                    result.error,
                    extra=log_fields(region=config.region, mirror=mirror.name, repository=mirror.source_repository),
                )
        if result.deleted and not dry_run:
            log.info(
                "mirror %s: %d object(s) deleted that garbage collection deleted at its source",
                mirror.name,
                result.deleted,
                extra=log_fields(region=config.region, mirror=mirror.name),
            )
        results.append(result)
    return results


def _one_mirror(
    service: ReplicationService, mirror: Mirror, settings: GcSettings, now: Callable[[], datetime]
) -> GcResult:
    """Check that the source repository and the mirror repository are what they should be, then run the pass."""
    from .service import validation_key

    source_client = service.client(mirror.source_region)
    source_repository = source_client.get_repository(mirror.source_repository)
    destination = service.client(mirror.destination_region)
    repository = destination.get_repository(mirror.name)
    if not is_mirror_repository(repository, mirror.storage_namespace):
        raise ReplicationError(
            f"repository {mirror.name} is not this mirror's (writable, or on another namespace): nothing deleted"
        )
    # A repository created since inside the mirror's namespace would look like data its source lacks.
    check_namespace_free(
        mirror.storage_namespace,
        where=f"region {mirror.destination_region}; nothing deleted",
        repositories=destination.list_repositories(page_size=service.config.list_repositories_page_size),
        ignore=mirror.name,
    )
    store = service.source_store(mirror.source_region)
    source = SourceReader(
        mirror.source_repository, source_repository.storage_namespace, store=store, client=source_client
    )
    return mirror_gc_deletions(
        mirror_id=mirror.id,
        mirror_name=mirror.name,
        source=source,
        destination=service.destination_store(mirror.storage_id),
        destination_namespace=mirror.storage_namespace,
        marks=service.mirrors,
        validated=service.mirrors,
        validation_keys=[validation_key(mirror, strict=False), validation_key(mirror, strict=True)],
        settings=settings,
        now=now,
    )
