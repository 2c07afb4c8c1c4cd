"""Mirror records: create, read, list and delete them, and move them between states.

Every write is decided by the database (unique constraints for names and namespaces, ``UPDATE ...
WHERE generation = n`` for state changes), so two regions writing at once cannot both win or lose an update.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import MirrorNotFound, MirrorsDatabaseError
from ..inputs import (
    DEFAULT_PAGE_SIZE,
    check_expected_generation,
    check_page_size,
    check_transition,
    id_taken,
    message_text,
    mirror_row,
    name_taken,
    namespace_taken,
    page_of,
    state_values,
    utc_now,
    with_state,
)
from ..models import Mirror, MirrorPage, MirrorState
from ..races import LostRace, conflict, settle
from .rows import first_mirror, select_mirror, to_mirror
from .schema import gc_missing, mirror_branches, mirrors, validated_ranges
from .transactions import Transactions

__all__ = ["MirrorRecords"]


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
        row = mirror_row(
            organization_id=organization_id,
            source_region=source_region,
            source_repository=source_repository,
            name=name,
            destination_region=destination_region,
            storage_namespace=storage_namespace,
            storage_id=storage_id,
            mirror_id=mirror_id,
            state=state,
            message=message,
        )

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
        check_page_size(page_size)
        wanted_states = state_values(states)
        stmt = select(mirrors).order_by(mirrors.c.id).limit(page_size + 1)
        if source_repository is not None:
            stmt = stmt.where(mirrors.c.source_repository == source_repository)
        if destination_region is not None:
            stmt = stmt.where(mirrors.c.destination_region == destination_region)
        if organization_id is not None:
            stmt = stmt.where(mirrors.c.organization_id == organization_id)
        if source_region is not None:
            stmt = stmt.where(mirrors.c.source_region == source_region)
        if wanted_states is not None:
            stmt = stmt.where(mirrors.c.state.in_(wanted_states))
        if after is not None:
            stmt = stmt.where(mirrors.c.id > after)

        def op(conn: Connection) -> list[Mirror]:
            return [to_mirror(r) for r in conn.execute(stmt).mappings()]

        return page_of(self._run(op, write=False), page_size)

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
        text_message = message_text(message)
        check_expected_generation(expected_generation)

        def op(conn: Connection) -> Mirror:
            current = select_mirror(conn, mirror_id)
            if current is None:
                raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
            check_transition(current, new_state, expected_generation)
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
                raise LostRace
            return with_state(current, state=new_state, message=text_message, updated_at=now)

        return settle(lambda: self._run(op), mirror_id, expected_generation)

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

        return settle(lambda: self._run(op), mirror_id, expected_generation)

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
            return name_taken(row, same_name)
        if which == "namespace":
            other = self._find(
                mirrors.c.destination_region == region,
                mirrors.c.storage_id == row["storage_id"],
                mirrors.c.storage_namespace == row["storage_namespace"],
            )
            return namespace_taken(row, other)
        if which == "id":
            return id_taken(row)
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
