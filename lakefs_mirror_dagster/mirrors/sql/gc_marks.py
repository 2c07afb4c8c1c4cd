"""Marks of a mirror's objects that its source no longer has: the clock of the garbage-collection grace period.

A pass that finds an object of the mirror's namespace missing from the source's namespace records when it
first saw that (``first_missing_at``, kept) and when it last did (``last_missing_at``, moved on every pass).
An object is deleted at the mirror only once its first sighting is older than the grace period and it is still
missing then, so a listing glitch or an object that comes back is never deleted. The database holds the
marks (not the process), so the grace period holds across runs, processes and restarts.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select

from ..inputs import check_gc_time, chunks, gc_addresses
from .schema import gc_missing
from .transactions import STATEMENT_CHUNK, Transactions, rowcount

__all__ = ["GcMarks"]


class GcMarks(Transactions):
    """The ``gc_missing`` table: (mirror ID, relative address) -> first and last time seen missing at the source."""

    def note_missing(self, mirror_id: str, addresses: Iterable[str], now: datetime) -> dict[str, datetime]:
        """Mark ``addresses`` missing at ``now`` (new marks start their grace period then; existing ones keep
        their first sighting and record this one); returns each address's first sighting."""
        check_gc_time(now)
        firsts: dict[str, datetime] = {}
        for chunk in chunks(gc_addresses(addresses), STATEMENT_CHUNK):
            rows = [
                {"mirror_id": mirror_id, "address": a, "first_missing_at": now, "last_missing_at": now} for a in chunk
            ]

            def op(
                conn: Connection, rows: list[dict[str, Any]] = rows, chunk: list[str] = chunk
            ) -> dict[str, datetime]:
                insert = self._insert(gc_missing).values(rows)
                conn.execute(
                    insert.on_conflict_do_update(
                        index_elements=[gc_missing.c.mirror_id, gc_missing.c.address],
                        set_={"last_missing_at": insert.excluded.last_missing_at},
                    )
                )
                return _firsts(conn, mirror_id, chunk)

            firsts.update(self._run(op))
        return firsts

    def missing_since(self, mirror_id: str, addresses: Iterable[str]) -> dict[str, datetime]:
        """The first sighting of each of ``addresses`` that is marked (a read: what a dry run uses)."""
        firsts: dict[str, datetime] = {}
        for chunk in chunks(gc_addresses(addresses), STATEMENT_CHUNK):
            firsts.update(self._run(functools.partial(_firsts, mirror_id=mirror_id, addresses=chunk), write=False))
        return firsts

    def forget_missing(self, mirror_id: str, addresses: Iterable[str]) -> int:
        """Drop the marks of ``addresses`` (deleted at the mirror, or found at the source again); returns the count."""
        removed = 0
        for chunk in chunks(gc_addresses(addresses), STATEMENT_CHUNK):
            stmt = delete(gc_missing).where(gc_missing.c.mirror_id == mirror_id, gc_missing.c.address.in_(chunk))
            removed += self._run(functools.partial(rowcount, stmt=stmt))
        return removed

    def sweep_missing(self, mirror_id: str, not_seen_since: datetime) -> int:
        """Drop the marks a complete pass that started at ``not_seen_since`` did not see missing: the object is at
        the source again, or gone from the mirror. Returns the count."""
        check_gc_time(not_seen_since)
        stmt = delete(gc_missing).where(
            gc_missing.c.mirror_id == mirror_id, gc_missing.c.last_missing_at < not_seen_since
        )
        return self._run(functools.partial(rowcount, stmt=stmt))

    def missing_count(self, mirror_id: str) -> int:
        """How many objects of the mirror are marked missing at its source."""
        stmt = select(func.count()).select_from(gc_missing).where(gc_missing.c.mirror_id == mirror_id)
        return self._run(lambda c: int(c.execute(stmt).scalar_one()), write=False)


def _firsts(conn: Connection, mirror_id: str, addresses: Sequence[str]) -> dict[str, datetime]:
    stmt = select(gc_missing.c.address, gc_missing.c.first_missing_at).where(
        gc_missing.c.mirror_id == mirror_id, gc_missing.c.address.in_(addresses)
    )
    return {str(a): when for a, when in conn.execute(stmt).all()}
