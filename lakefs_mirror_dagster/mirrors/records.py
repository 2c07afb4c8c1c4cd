"""Mirror records: create, read, list and delete them, and move them between states.

Every write is decided by the database (unique constraints for names and namespaces, ``UPDATE ...
WHERE generation = n`` for state changes), so two regions writing at once cannot both win or lose an update.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

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
    MirrorPage,
    MirrorState,
    new_mirror_id,
)
from .rows import first_mirror, select_mirror, to_mirror, utc_now
from .schema import gc_missing, mirror_branches, mirrors, validated_ranges
from .transactions import CAS_RETRIES, LostRace, Transactions, conflict

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "MirrorRecords"]

DEFAULT_PAGE_SIZE = 1000  # the reference's list_mirrors_page_size default
MAX_PAGE_SIZE = 10_000
_MAX_TEXT = 4096
_STORAGE_ID = re.compile(r"^[A-Za-z0-9._-]{0,128}$")


class MirrorRecords(Transactions):
    """The ``mirrors`` table: one row per mirror, with its state and generation."""

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
        now = utc_now()
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
        return to_mirror(row)

    def get_mirror(self, mirror_id: str) -> Mirror:
        """The mirror with this id; ``MirrorNotFound`` if there is none."""
        found = self._run(lambda c: select_mirror(c, mirror_id), write=False)
        if found is None:
            raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
        return found

    def get_by_name(self, region: str, name: str) -> Mirror:
        """The mirror repository ``name`` in destination ``region``; ``MirrorNotFound`` if none."""
        stmt = select(mirrors).where(mirrors.c.destination_region == region, mirrors.c.name == name)
        found = self._run(lambda c: first_mirror(c, stmt), write=False)
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
            return [to_mirror(r) for r in conn.execute(stmt).mappings()]

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
            current = select_mirror(conn, mirror_id)
            if current is None:
                raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
            if expected_generation is not None and current.generation != expected_generation:
                raise conflict(mirror_id, expected_generation, current.generation)
            if new_state != current.state and new_state not in ALLOWED_TRANSITIONS[current.state]:
                raise InvalidStateTransition(
                    f"mirror {mirror_id!r} is {current.state.value}; it cannot become {new_state.value}"
                )
            now = utc_now()
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
                    raise LostRace
                raise conflict(mirror_id, expected_generation, None)
            return _replace(current, state=new_state, message=text_message, updated_at=now)

        for _ in range(CAS_RETRIES):
            try:
                return self._run(op)
            except LostRace:
                continue
        raise ConcurrentUpdate(
            f"mirror {mirror_id!r} kept changing under us ({CAS_RETRIES} attempts)",
            mirror_id=mirror_id,
            expected=None,
            actual=None,
        )

    def delete_mirror(self, mirror_id: str, *, expected_generation: int | None = None) -> bool:
        """Remove the mirror record, its branches, its garbage-collection marks and its validated-ranges cache.

        The cache goes too: a later mirror on the same namespace must not trust ranges that may have
        been deleted with the old repository. Returns False if there was no such mirror.
        """

        def op(conn: Connection) -> bool:
            current = select_mirror(conn, mirror_id)
            if current is None:
                return False
            if expected_generation is not None and current.generation != expected_generation:
                raise conflict(mirror_id, expected_generation, current.generation)
            conn.execute(delete(mirror_branches).where(mirror_branches.c.mirror_id == mirror_id))
            conn.execute(delete(gc_missing).where(gc_missing.c.mirror_id == mirror_id))
            conn.execute(delete(validated_ranges).where(validated_ranges.c.namespace == current.validation_namespace))
            result = conn.execute(
                delete(mirrors).where(mirrors.c.id == mirror_id, mirrors.c.generation == current.generation)
            )
            if result.rowcount != 1:
                raise LostRace
            return True

        for _ in range(CAS_RETRIES):
            try:
                return self._run(op)
            except LostRace:
                if expected_generation is not None:
                    raise conflict(mirror_id, expected_generation, None) from None
        raise ConcurrentUpdate(
            f"mirror {mirror_id!r} kept changing under us ({CAS_RETRIES} attempts)",
            mirror_id=mirror_id,
            expected=None,
            actual=None,
        )

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
        return self._run(lambda c: first_mirror(c, select(mirrors).where(*conditions)), write=False)


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


def _replace(mirror: Mirror, *, state: MirrorState, message: str, updated_at: datetime) -> Mirror:
    return dataclasses.replace(
        mirror, state=state, message=message, updated_at=updated_at, generation=mirror.generation + 1
    )


def _check(pattern: re.Pattern[str], field: str, value: object, expected: str = "") -> None:
    if not isinstance(value, str) or not pattern.match(value):
        hint = f" (expected {expected})" if expected else f" (must match {pattern.pattern})"
        raise InvalidMirrorSpec(f"invalid {field} {value!r}{hint}")


def _message(message: object) -> str:
    if not isinstance(message, str):
        raise InvalidMirrorSpec(f"message must be a string, got {type(message).__name__}")
    return message if len(message) <= _MAX_TEXT else message[: _MAX_TEXT - 3] + "..."
