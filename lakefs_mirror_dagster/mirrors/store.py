"""``MirrorStore``: the mirrors database that all regions share.

SQLite (one file, WAL, busy timeout) serves a single machine; PostgreSQL serves regions that share it.
Every write is one short transaction whose outcome is decided by the database itself (unique
constraints, ``UPDATE ... WHERE generation = n``), never by a read in Python followed by a blind write,
so two regions writing at once cannot corrupt it or lose an update.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sqlite3
import time
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.pool import StaticPool

from .errors import (
    ConcurrentUpdate,
    InvalidMirrorSpec,
    InvalidStateTransition,
    MirrorExists,
    MirrorNotFound,
    MirrorsDatabaseError,
    NamespaceInUse,
)
from .models import (
    ALLOWED_TRANSITIONS,
    MIRROR_ID,
    PLAIN_ID,
    REPOSITORY_NAME,
    STORAGE_NAMESPACE,
    Mirror,
    MirrorBranch,
    MirrorPage,
    MirrorState,
    new_mirror_id,
)
from .schema import metadata, mirror_branches, mirrors, validated_ranges

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "MirrorStore"]

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 1000  # the reference's list_mirrors_page_size default
MAX_PAGE_SIZE = 10_000
_CHUNK = 500  # ids per statement: far below SQLite's bound-parameter limit
_TRANSIENT_RETRIES = 5
_CAS_RETRIES = 20
_DDL_LOCK_KEY = zlib.crc32(b"lakefs_mirror_dagster.mirrors.schema")
_READ_ONLY = "mirrors_read_only"
_MAX_TEXT = 4096
_STORAGE_ID = re.compile(r"^[A-Za-z0-9._-]{0,128}$")


class _LostRace(Exception):
    """Internal: an unconditional CAS lost to a concurrent writer and should re-read and retry."""


def _now() -> datetime:
    return datetime.now(UTC)


class MirrorStore:
    """Typed access to the mirrors database; tables are created on construction.

    ``url`` is a SQLAlchemy URL (string or ``URL``): ``sqlite:///path/mirrors.db`` (WAL mode, busy
    timeout) for one machine, ``postgresql+psycopg://user:pass@host/db`` when regions share the
    database (``postgres://`` and ``postgresql://`` are read as psycopg 3 too).
    """

    def __init__(
        self,
        url: str | URL,
        *,
        busy_timeout_s: float = 30.0,
        create_tables: bool = True,
        echo: bool = False,
    ) -> None:
        self._engine = _make_engine(url, busy_timeout_s=busy_timeout_s, echo=echo)
        self.dialect = self._engine.dialect.name
        if create_tables:
            self.create_tables()

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        """The database URL with any password masked (safe to log)."""
        return self._engine.url.render_as_string(hide_password=True)

    @property
    def engine(self) -> Engine:
        return self._engine

    def create_tables(self) -> None:
        """Create missing tables; safe when several processes start at once.

        PostgreSQL: under a transaction-scoped advisory lock (concurrent ``CREATE TABLE`` would otherwise
        race on the catalog). SQLite: inside ``BEGIN IMMEDIATE``, which serialises writers anyway.
        """

        def op(conn: Connection) -> None:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DDL_LOCK_KEY})
            metadata.create_all(conn)
            _add_missing_columns(conn)

        self._run(op)

    def close(self) -> None:
        """Release pooled connections (call before forking, and when done)."""
        self._engine.dispose()

    def __enter__(self) -> MirrorStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MirrorStore({self.url!r})"

    # ------------------------------------------------------------------ mirrors
    def create_mirror(
        self,
        *,
        organization_id: str,
        source_region: str,
        source_repository: str,
        name: str,
        destination_region: str,
        storage_namespace: str,
        storage_id: str = "",
        mirror_id: str | None = None,
        state: MirrorState | str = MirrorState.PENDING,
        message: str = "",
    ) -> Mirror:
        """Record a new mirror (generation 1).

        Raises ``MirrorExists`` when ``name`` is taken in ``destination_region`` (or ``mirror_id`` is
        taken) and ``NamespaceInUse`` when another mirror there writes to the same namespace.
        """
        _check(PLAIN_ID, "organization_id", organization_id)
        _check(PLAIN_ID, "source_region", source_region)
        _check(PLAIN_ID, "destination_region", destination_region)
        _check(REPOSITORY_NAME, "source_repository", source_repository, "a lakeFS repository name")
        _check(REPOSITORY_NAME, "name", name, "a lakeFS repository name: ^[a-z0-9][a-z0-9-]{2,62}$")
        _check(
            STORAGE_NAMESPACE,
            "storage_namespace",
            storage_namespace,
            "<scheme>://... (s3, gs, https, local...)",
        )
        if len(storage_namespace) > 1024:
            raise InvalidMirrorSpec("storage_namespace is longer than 1024 characters")
        _check(_STORAGE_ID, "storage_id", storage_id)
        mirror_id = new_mirror_id() if mirror_id is None else mirror_id
        _check(MIRROR_ID, "mirror_id", mirror_id)
        now = _now()
        row: dict[str, Any] = {
            "id": mirror_id,
            "organization_id": organization_id,
            "source_region": source_region,
            "source_repository": source_repository,
            "name": name,
            "destination_region": destination_region,
            "storage_namespace": storage_namespace,
            "storage_id": storage_id,
            "state": MirrorState.parse(state).value,
            "message": _message(message),
            "created_at": now,
            "updated_at": now,
            "generation": 1,
        }

        def op(conn: Connection) -> None:
            conn.execute(insert(mirrors).values(**row))

        try:
            self._run(op)
        except IntegrityError as exc:
            raise self._create_conflict(exc, row) from None
        return _to_mirror(row)

    def get_mirror(self, mirror_id: str) -> Mirror:
        """The mirror with this id; ``MirrorNotFound`` if there is none."""
        found = self._run(lambda c: _select_mirror(c, mirror_id), write=False)
        if found is None:
            raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
        return found

    def get_by_name(self, region: str, name: str) -> Mirror:
        """The mirror repository ``name`` in destination ``region``; ``MirrorNotFound`` if none."""
        stmt = select(mirrors).where(mirrors.c.destination_region == region, mirrors.c.name == name)
        found = self._run(lambda c: _first_mirror(c, stmt), write=False)
        if found is None:
            raise MirrorNotFound(f"no mirror named {name!r} in region {region!r}")
        return found

    def list_mirrors(
        self,
        *,
        source_repository: str | None = None,
        destination_region: str | None = None,
        states: Collection[MirrorState | str] | None = None,
        organization_id: str | None = None,
        source_region: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        after: str | None = None,
    ) -> MirrorPage:
        """One page of mirrors ordered by id (creation order); ``after`` is the previous ``next_after``."""
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidMirrorSpec(f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}, got {page_size!r}")
        stmt = select(mirrors).order_by(mirrors.c.id).limit(page_size + 1)
        if source_repository is not None:
            stmt = stmt.where(mirrors.c.source_repository == source_repository)
        if destination_region is not None:
            stmt = stmt.where(mirrors.c.destination_region == destination_region)
        if organization_id is not None:
            stmt = stmt.where(mirrors.c.organization_id == organization_id)
        if source_region is not None:
            stmt = stmt.where(mirrors.c.source_region == source_region)
        if states is not None:
            if isinstance(states, str):
                raise InvalidMirrorSpec("states must be a collection of states, not a single string")
            stmt = stmt.where(mirrors.c.state.in_([MirrorState.parse(s).value for s in states]))
        if after is not None:
            stmt = stmt.where(mirrors.c.id > after)

        def op(conn: Connection) -> list[Mirror]:
            return [_to_mirror(r) for r in conn.execute(stmt).mappings()]

        found = self._run(op, write=False)
        if len(found) > page_size:
            return MirrorPage(found[:page_size], found[page_size - 1].id)
        return MirrorPage(found, None)

    def iter_mirrors(self, *, page_size: int = DEFAULT_PAGE_SIZE, **filters: Any) -> Iterator[Mirror]:
        """Every mirror matching ``list_mirrors`` filters, fetched page by page."""
        after: str | None = None
        while True:
            page = self.list_mirrors(page_size=page_size, after=after, **filters)
            yield from page.mirrors
            if page.next_after is None:
                return
            after = page.next_after

    def set_state(
        self,
        mirror_id: str,
        state: MirrorState | str,
        message: str,
        expected_generation: int | None,
    ) -> Mirror:
        """Compare-and-set the state; returns the mirror with its new generation.

        With ``expected_generation`` the update happens only if the mirror is still at that generation,
        else ``ConcurrentUpdate`` (someone else changed it: re-read and decide again). ``None`` means
        "whatever the current generation", still atomic and still checked against the transition table.
        Raises ``InvalidStateTransition`` for a state that cannot follow the current one.
        """
        new_state = MirrorState.parse(state)
        text_message = _message(message)
        if expected_generation is not None and (
            isinstance(expected_generation, bool) or not isinstance(expected_generation, int)
        ):
            raise InvalidMirrorSpec(f"expected_generation must be an int or None, got {expected_generation!r}")

        def op(conn: Connection) -> Mirror:
            current = _select_mirror(conn, mirror_id)
            if current is None:
                raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
            if expected_generation is not None and current.generation != expected_generation:
                raise _conflict(mirror_id, expected_generation, current.generation)
            if new_state != current.state and new_state not in ALLOWED_TRANSITIONS[current.state]:
                raise InvalidStateTransition(
                    f"mirror {mirror_id!r} is {current.state.value}; it cannot become {new_state.value}"
                )
            now = _now()
            result = conn.execute(
                update(mirrors)
                .where(mirrors.c.id == mirror_id, mirrors.c.generation == current.generation)
                .values(
                    state=new_state.value,
                    message=text_message,
                    updated_at=now,
                    generation=current.generation + 1,
                )
            )
            if result.rowcount != 1:
                if expected_generation is None:
                    raise _LostRace
                raise _conflict(mirror_id, expected_generation, None)
            return _replace(current, state=new_state, message=text_message, updated_at=now)

        for _ in range(_CAS_RETRIES):
            try:
                return self._run(op)
            except _LostRace:
                continue
        raise ConcurrentUpdate(
            f"mirror {mirror_id!r} kept changing under us ({_CAS_RETRIES} attempts)",
            mirror_id=mirror_id,
            expected=None,
            actual=None,
        )

    def delete_mirror(self, mirror_id: str, *, expected_generation: int | None = None) -> bool:
        """Remove the mirror record, its branches, and its validated-ranges cache.

        The cache goes too: a later mirror on the same namespace must not trust ranges that may have
        been deleted with the old repository. Returns False if there was no such mirror.
        """

        def op(conn: Connection) -> bool:
            current = _select_mirror(conn, mirror_id)
            if current is None:
                return False
            if expected_generation is not None and current.generation != expected_generation:
                raise _conflict(mirror_id, expected_generation, current.generation)
            conn.execute(delete(mirror_branches).where(mirror_branches.c.mirror_id == mirror_id))
            conn.execute(delete(validated_ranges).where(validated_ranges.c.namespace == current.validation_namespace))
            result = conn.execute(
                delete(mirrors).where(mirrors.c.id == mirror_id, mirrors.c.generation == current.generation)
            )
            if result.rowcount != 1:
                raise _LostRace
            return True

        for _ in range(_CAS_RETRIES):
            try:
                return self._run(op)
            except _LostRace:
                if expected_generation is not None:
                    raise _conflict(mirror_id, expected_generation, None) from None
        raise ConcurrentUpdate(
            f"mirror {mirror_id!r} kept changing under us ({_CAS_RETRIES} attempts)",
            mirror_id=mirror_id,
            expected=None,
            actual=None,
        )

    # ------------------------------------------------------------------ branches
    def record_branch(
        self,
        mirror_id: str,
        branch: str,
        *,
        source_commit_id: str | None = None,
        source_commit_time: datetime | None = None,
        mirrored_commit_id: str | None = None,
        promoted_at: datetime | None = None,
        lag_seconds: float | None = None,
    ) -> MirrorBranch:
        """Upsert what we know about a branch; arguments left as None keep their stored value.

        The sensor records the source head it saw; the promote step records the mirrored commit, when,
        and the lag. Both may write at once: each row update is atomic and touches only its own fields.
        """
        _check_branch(branch)
        for field_name, value in (
            ("source_commit_id", source_commit_id),
            ("mirrored_commit_id", mirrored_commit_id),
        ):
            if value is not None and (not isinstance(value, str) or not 0 < len(value) <= 128):
                raise InvalidMirrorSpec(f"{field_name} must be a non-empty string of at most 128 characters")
        for field_name, when in (("source_commit_time", source_commit_time), ("promoted_at", promoted_at)):
            if when is not None and (not isinstance(when, datetime) or when.tzinfo is None):
                raise InvalidMirrorSpec(f"{field_name} must be a timezone-aware datetime, got {when!r}")
        if lag_seconds is not None and (isinstance(lag_seconds, bool) or not isinstance(lag_seconds, int | float)):
            raise InvalidMirrorSpec(f"lag_seconds must be a number, got {lag_seconds!r}")
        changes: dict[str, Any] = {
            k: v
            for k, v in {
                "source_commit_id": source_commit_id,
                "source_commit_time": source_commit_time,
                "mirrored_commit_id": mirrored_commit_id,
                "promoted_at": promoted_at,
                "lag_seconds": None if lag_seconds is None else float(lag_seconds),
            }.items()
            if v is not None
        }
        changes["updated_at"] = _now()

        def op(conn: Connection) -> MirrorBranch:
            if _select_mirror(conn, mirror_id) is None:
                raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
            stmt = self._insert(mirror_branches).values(mirror_id=mirror_id, branch=branch, **changes)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[mirror_branches.c.mirror_id, mirror_branches.c.branch], set_=changes
                )
            )
            found = _select_branches(conn, mirror_id, branch)
            return found[0]

        try:
            return self._run(op)
        except IntegrityError:  # the mirror was deleted between our check and the insert
            raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id) from None

    def get_branches(self, mirror_id: str) -> list[MirrorBranch]:
        """All recorded branches of a mirror, by name; ``MirrorNotFound`` for an unknown mirror."""

        def op(conn: Connection) -> list[MirrorBranch] | None:
            if _select_mirror(conn, mirror_id) is None:
                return None
            return _select_branches(conn, mirror_id)

        found = self._run(op, write=False)
        if found is None:
            raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
        return found

    def get_branch(self, mirror_id: str, branch: str) -> MirrorBranch | None:
        """One recorded branch, or None if nothing was recorded for it."""
        found = self._run(lambda c: _select_branches(c, mirror_id, branch), write=False)
        return found[0] if found else None

    def delete_branch(self, mirror_id: str, branch: str) -> bool:
        """Forget a branch (deleted at the source); False if it was not recorded."""

        def op(conn: Connection) -> bool:
            result = conn.execute(
                delete(mirror_branches).where(
                    mirror_branches.c.mirror_id == mirror_id, mirror_branches.c.branch == branch
                )
            )
            return bool(result.rowcount)

        return self._run(op)

    # ------------------------------------------------------------------ validated ranges
    def mark_ranges_validated(self, namespace: str, fingerprints: Mapping[str, str]) -> int:
        """Remember that these ranges (ID -> fingerprint of the file as validated) are complete at
        ``namespace``; returns how many were new or had another fingerprint.

        Idempotent and safe to run from several processes at once (upsert, ids written in sorted order so
        concurrent batches take row locks in the same order and cannot deadlock).
        """
        _check_namespace(namespace)
        if not isinstance(fingerprints, Mapping):
            raise InvalidMirrorSpec("fingerprints must map range IDs to the fingerprints of their files")
        ids = _check_range_ids(fingerprints)
        for rid in ids:
            fingerprint = fingerprints[rid]
            if not isinstance(fingerprint, str) or len(fingerprint) > 512:
                raise InvalidMirrorSpec(f"invalid fingerprint {fingerprint!r} of range {rid}")
        changed = 0
        table = validated_ranges
        for chunk in _chunks(ids):
            now = _now()
            rows = [
                {"namespace": namespace, "range_id": r, "validated_at": now, "fingerprint": fingerprints[r]}
                for r in chunk
            ]

            def op(conn: Connection, rows: list[dict[str, Any]] = rows) -> int:
                insert = self._insert(table).values(rows)
                stmt = insert.on_conflict_do_update(
                    index_elements=[table.c.namespace, table.c.range_id],
                    set_={"fingerprint": insert.excluded.fingerprint, "validated_at": insert.excluded.validated_at},
                    where=table.c.fingerprint != insert.excluded.fingerprint,
                ).returning(table.c.range_id)
                # Count what RETURNING gives back: rowcount of a multi-row insert is -1 on psycopg.
                return len(conn.execute(stmt).all())

            changed += self._run(op)
        return changed

    def validated_ranges(self, namespace: str, range_ids: Iterable[str]) -> dict[str, str]:
        """The ranges of ``range_ids`` already validated at ``namespace``, each with its file's fingerprint."""
        _check_namespace(namespace)
        ids = _check_range_ids(range_ids)
        found: dict[str, str] = {}
        table = validated_ranges
        for chunk in _chunks(ids):
            stmt = select(table.c.range_id, table.c.fingerprint).where(
                table.c.namespace == namespace, table.c.range_id.in_(chunk)
            )
            found.update(self._run(functools.partial(_pairs, stmt=stmt), write=False))
        return found

    def forget_validated(self, namespace: str, range_ids: Iterable[str] | None = None) -> int:
        """Drop ranges from the cache (all of ``namespace`` when ``range_ids`` is None); returns the count."""
        _check_namespace(namespace)
        where = validated_ranges.c.namespace == namespace
        if range_ids is None:
            return self._run(functools.partial(_rowcount, stmt=delete(validated_ranges).where(where)))
        removed = 0
        for chunk in _chunks(_check_range_ids(range_ids)):
            stmt = delete(validated_ranges).where(where, validated_ranges.c.range_id.in_(chunk))
            removed += self._run(functools.partial(_rowcount, stmt=stmt))
        return removed

    def validated_count(self, namespace: str) -> int:
        """How many ranges are cached as validated at ``namespace`` (for status reports)."""
        _check_namespace(namespace)
        stmt = select(func.count()).select_from(validated_ranges).where(validated_ranges.c.namespace == namespace)
        return self._run(lambda c: int(c.execute(stmt).scalar_one()), write=False)

    # ------------------------------------------------------------------ internals
    def _insert(self, table: Any) -> Any:
        """INSERT with the dialect's ON CONFLICT support (both SQLite and PostgreSQL have it)."""
        if self.dialect == "postgresql":
            return pg_dialect.insert(table)
        return sqlite_dialect.insert(table)

    def _run(self, op: Callable[[Connection], T], *, write: bool = True) -> T:
        """Run ``op`` in one transaction, retrying only errors after which nothing was committed."""
        delay = 0.05
        for attempt in range(_TRANSIENT_RETRIES):
            try:
                with self._engine.connect() as conn:
                    if not write:
                        conn = conn.execution_options(**{_READ_ONLY: True})
                    with conn.begin():
                        return op(conn)
            except DBAPIError as exc:
                if isinstance(exc, IntegrityError):
                    raise
                if not _transient(exc):
                    if isinstance(exc, OperationalError | InterfaceError):  # down, refused, wrong password, ...
                        raise MirrorsDatabaseError(f"mirrors database {self.url} failed: {exc.orig}") from exc
                    raise
                if attempt == _TRANSIENT_RETRIES - 1:
                    raise MirrorsDatabaseError(
                        f"mirrors database {self.url} stayed busy after {_TRANSIENT_RETRIES} attempts: {exc.orig}"
                    ) from exc
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _create_conflict(self, exc: IntegrityError, row: dict[str, Any]) -> MirrorsDatabaseError:
        """Turn a unique violation into the error that names what is already there.

        When both name and namespace clash, the databases disagree on which constraint they report, so
        the name is checked first: "this mirror already exists" is the more useful answer.
        """
        which = _violated(exc)
        region = row["destination_region"]
        same_name = self._find(mirrors.c.destination_region == region, mirrors.c.name == row["name"])
        if same_name is not None and which != "id":
            which = "name"
        if which == "name":
            other = same_name
            detail = f" (id {other.id}, state {other.state.value}, source {other.source_repository})" if other else ""
            return MirrorExists(
                f"a mirror named {row['name']!r} already exists in region {region!r}{detail}",
                existing_id=other.id if other else None,
            )
        if which == "namespace":
            other = self._find(
                mirrors.c.destination_region == region,
                mirrors.c.storage_id == row["storage_id"],
                mirrors.c.storage_namespace == row["storage_namespace"],
            )
            detail = f" by mirror {other.name!r} (id {other.id}, state {other.state.value})" if other else ""
            store = f" of storage {row['storage_id']!r}" if row["storage_id"] else ""
            return NamespaceInUse(
                f"storage namespace {row['storage_namespace']!r}{store} in region {region!r} is already used{detail}",
                existing_id=other.id if other else None,
            )
        if which == "id":
            return MirrorExists(f"a mirror with id {row['id']!r} already exists", existing_id=row["id"])
        return MirrorsDatabaseError(f"could not create mirror {row['name']!r}: {exc.orig}")

    def _find(self, *conditions: Any) -> Mirror | None:
        return self._run(lambda c: _first_mirror(c, select(mirrors).where(*conditions)), write=False)


# ---------------------------------------------------------------------- engine
def _make_engine(url: str | URL, *, busy_timeout_s: float, echo: bool) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise InvalidMirrorSpec(f"invalid mirrors database URL {url!r}: {exc}") from None
    backend = parsed.get_backend_name()
    if backend in ("postgres", "postgresql"):
        # "postgres://" (lakeFS-style connection strings) is unknown to SQLAlchemy, and a bare
        # "postgresql://" would pick psycopg2, which we do not ship: both mean psycopg 3 here.
        if parsed.drivername in ("postgres", "postgresql"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        elif backend == "postgres":
            parsed = parsed.set(drivername="postgresql+" + parsed.get_driver_name())
        return create_engine(parsed, echo=echo, pool_pre_ping=True, pool_size=5, max_overflow=10)
    if backend != "sqlite":
        raise InvalidMirrorSpec(
            f"unsupported mirrors database URL {parsed.render_as_string(hide_password=True)!r}: "
            "use sqlite:///path/to/mirrors.db or postgresql+psycopg://user:pass@host:port/db"
        )
    if sqlite3.sqlite_version_info < (3, 35):
        raise MirrorsDatabaseError(
            f"SQLite {sqlite3.sqlite_version} is too old for the mirrors database (it needs >= 3.35 for RETURNING)"
        )
    database = parsed.database or ""
    in_memory = database in ("", ":memory:") or parsed.query.get("mode") == "memory"
    if in_memory:
        engine = create_engine(parsed, echo=echo, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        if not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, echo=echo, connect_args={"timeout": busy_timeout_s})
    _sqlite_transactions(engine, busy_timeout_ms=int(busy_timeout_s * 1000), wal=not in_memory)
    return engine


def _sqlite_transactions(engine: Engine, *, busy_timeout_ms: int, wal: bool) -> None:
    """Take SQLite's transaction handling away from the driver so writes start with ``BEGIN IMMEDIATE``.

    A deferred transaction that reads and then writes can fail at once with SQLITE_BUSY when another
    process wrote in between (the busy timeout does not help there); taking the write lock up front
    makes writers queue on the busy timeout instead. Reads use a plain deferred ``BEGIN``.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
            if wal:
                cursor.execute("PRAGMA journal_mode = WAL")
                cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        read_only = conn.get_execution_options().get(_READ_ONLY, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def _transient(exc: DBAPIError) -> bool:
    """Errors after which the transaction was rolled back and an identical retry can succeed."""
    if exc.connection_invalidated:
        return False  # the commit may or may not have happened; let the caller decide
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in ("40001", "40P01", "55P03"):  # serialization failure, deadlock, lock not available
        return True
    message = str(exc.orig).lower()
    return "database is locked" in message or "database is busy" in message


def _violated(exc: IntegrityError) -> str | None:
    """Which uniqueness rule of ``mirrors`` an insert broke: "name", "namespace", "id" or None."""
    constraint = getattr(getattr(exc.orig, "diag", None), "constraint_name", None)
    by_constraint = {
        "uq_mirrors_destination_name": "name",
        "uq_mirrors_destination_namespace": "namespace",
        "pk_mirrors": "id",
    }
    if constraint in by_constraint:
        return by_constraint[constraint]
    message = str(exc.orig)
    marker = "UNIQUE constraint failed: "
    if marker in message:  # SQLite names the columns: "mirrors.destination_region, mirrors.name"
        columns = {c.strip() for c in message.split(marker, 1)[1].split(",")}
        if "mirrors.storage_namespace" in columns:
            return "namespace"
        if "mirrors.name" in columns:
            return "name"
        if columns == {"mirrors.id"}:
            return "id"
    return None


# ---------------------------------------------------------------------- rows
def _to_mirror(row: Any) -> Mirror:
    return Mirror(
        id=row["id"],
        organization_id=row["organization_id"],
        source_region=row["source_region"],
        source_repository=row["source_repository"],
        name=row["name"],
        destination_region=row["destination_region"],
        storage_namespace=row["storage_namespace"],
        storage_id=row["storage_id"],
        state=MirrorState(row["state"]),
        message=row["message"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        generation=int(row["generation"]),
    )


def _replace(mirror: Mirror, *, state: MirrorState, message: str, updated_at: datetime) -> Mirror:
    return dataclasses.replace(
        mirror, state=state, message=message, updated_at=updated_at, generation=mirror.generation + 1
    )


def _add_missing_columns(conn: Connection) -> None:
    """Columns added after a table first shipped: ``create_all`` only creates missing tables, so a
    database made by an older version gets them here (under the same DDL lock)."""
    columns = {c["name"] for c in inspect(conn).get_columns(validated_ranges.name)}
    if "fingerprint" not in columns:
        conn.execute(text("ALTER TABLE validated_ranges ADD COLUMN fingerprint VARCHAR(512) NOT NULL DEFAULT ''"))


def _pairs(conn: Connection, stmt: Any) -> dict[str, str]:
    return {str(key): str(value) for key, value in conn.execute(stmt).all()}


def _rowcount(conn: Connection, stmt: Any) -> int:
    return int(conn.execute(stmt).rowcount)


def _select_mirror(conn: Connection, mirror_id: str) -> Mirror | None:
    return _first_mirror(conn, select(mirrors).where(mirrors.c.id == mirror_id))


def _first_mirror(conn: Connection, stmt: Any) -> Mirror | None:
    row = conn.execute(stmt).mappings().first()
    return _to_mirror(row) if row is not None else None


def _select_branches(conn: Connection, mirror_id: str, branch: str | None = None) -> list[MirrorBranch]:
    stmt = select(mirror_branches).where(mirror_branches.c.mirror_id == mirror_id)
    if branch is not None:
        stmt = stmt.where(mirror_branches.c.branch == branch)
    return [
        MirrorBranch(
            mirror_id=r["mirror_id"],
            branch=r["branch"],
            source_commit_id=r["source_commit_id"],
            source_commit_time=r["source_commit_time"],
            mirrored_commit_id=r["mirrored_commit_id"],
            promoted_at=r["promoted_at"],
            lag_seconds=r["lag_seconds"],
            updated_at=r["updated_at"],
        )
        for r in conn.execute(stmt.order_by(mirror_branches.c.branch)).mappings()
    ]


def _conflict(mirror_id: str, expected: int, actual: int | None) -> ConcurrentUpdate:
    now = f"it is now at generation {actual}" if actual is not None else "another writer changed it first"
    return ConcurrentUpdate(
        f"mirror {mirror_id!r} is no longer at generation {expected}: {now}",
        mirror_id=mirror_id,
        expected=expected,
        actual=actual,
    )


# ---------------------------------------------------------------------- validation
def _check(pattern: re.Pattern[str], field: str, value: object, expected: str = "") -> None:
    if not isinstance(value, str) or not pattern.match(value):
        hint = f" (expected {expected})" if expected else f" (must match {pattern.pattern})"
        raise InvalidMirrorSpec(f"invalid {field} {value!r}{hint}")


def _message(message: object) -> str:
    if not isinstance(message, str):
        raise InvalidMirrorSpec(f"message must be a string, got {type(message).__name__}")
    return message if len(message) <= _MAX_TEXT else message[: _MAX_TEXT - 3] + "..."


def _check_branch(branch: object) -> None:
    if not isinstance(branch, str) or not 0 < len(branch) <= 255 or branch.strip() != branch:
        raise InvalidMirrorSpec(f"invalid branch name {branch!r}")


def _check_namespace(namespace: object) -> None:
    if not isinstance(namespace, str) or not 0 < len(namespace) <= 1400:
        raise InvalidMirrorSpec(f"invalid validated-ranges namespace {namespace!r} (1 to 1400 characters)")


def _check_range_ids(range_ids: Iterable[str]) -> list[str]:
    if isinstance(range_ids, str | bytes):
        raise InvalidMirrorSpec("range_ids must be a collection of range IDs, not a single string")
    ids = set()
    for rid in range_ids:
        if not isinstance(rid, str) or not 0 < len(rid) <= 128 or not rid.isprintable() or " " in rid:
            raise InvalidMirrorSpec(f"invalid range id {rid!r}")
        ids.add(rid)
    return sorted(ids)


def _chunks(items: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield list(items[start : start + _CHUNK])
