"""The refs in flight on SQL (see ``in_flight_model.py`` for what a record means): one row per mirror, kind and ref,
upserted at the engine's progress cadence and deleted when the ref is done. Rows go with their mirror."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlalchemy.exc import IntegrityError

from ..errors import MirrorNotFound
from ..in_flight_model import RefInFlight, check_in_flight
from .rows import select_mirror
from .schema import refs_in_flight
from .transactions import Transactions, rowcount

__all__ = ["InFlightRecords"]


class InFlightRecords(Transactions):
    """The ``refs_in_flight`` table: (mirror ID, kind, ref) -> target commit, times and progress counters."""

    def put_in_flight(self, record: RefInFlight) -> None:
        """Write (or overwrite) the record of a ref in flight; ``MirrorNotFound`` for an unknown mirror."""
        row = check_in_flight(record).as_row()
        changes = {k: v for k, v in row.items() if k not in ("mirror_id", "kind", "ref")}

        def op(conn: Connection) -> None:
            if select_mirror(conn, record.mirror_id) is None:
                raise MirrorNotFound(f"no mirror with id {record.mirror_id!r}", mirror_id=record.mirror_id)
            insert = self._insert(refs_in_flight).values(**row)
            conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[refs_in_flight.c.mirror_id, refs_in_flight.c.kind, refs_in_flight.c.ref],
                    set_=changes,
                )
            )

        try:
            self._run(op)
        except IntegrityError:  # the mirror was deleted between our check and the insert
            raise MirrorNotFound(f"no mirror with id {record.mirror_id!r}", mirror_id=record.mirror_id) from None

    def clear_in_flight(self, mirror_id: str, kind: str, ref: str) -> bool:
        """Remove the record of a ref that is done; False if there was none."""
        stmt = delete(refs_in_flight).where(
            refs_in_flight.c.mirror_id == mirror_id, refs_in_flight.c.kind == kind, refs_in_flight.c.ref == ref
        )
        return bool(self._run(functools.partial(rowcount, stmt=stmt)))

    def refs_in_flight(self, mirror_id: str) -> list[RefInFlight]:
        """The mirror's records, by kind and ref (stale ones included: readers decide)."""
        stmt = (
            select(refs_in_flight)
            .where(refs_in_flight.c.mirror_id == mirror_id)
            .order_by(refs_in_flight.c.kind, refs_in_flight.c.ref)
        )

        def op(conn: Connection) -> list[RefInFlight]:
            return [_record(row) for row in conn.execute(stmt).mappings()]

        return self._run(op, write=False)


def _record(row: Any) -> RefInFlight:
    return RefInFlight(**{name: row[name] for name in RefInFlight.__dataclass_fields__})
