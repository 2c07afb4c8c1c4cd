"""The validated-ranges cache: ranges already checked complete at a storage namespace, by fingerprint.

A range is trusted again later only while its file still has the fingerprint it had when validated;
the cache is shared by all regions writing to the namespace.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, delete, func, select

from ..inputs import check_namespace, check_range_ids, chunks, fingerprint_ids, utc_now
from .schema import validated_ranges
from .transactions import STATEMENT_CHUNK, Transactions, rowcount

__all__ = ["ValidatedRangesCache"]


class ValidatedRangesCache(Transactions):
    """The ``validated_ranges`` table: (namespace, range ID) -> fingerprint of the validated file."""

    def mark_ranges_validated(self, namespace: str, fingerprints: Mapping[str, str]) -> int:
        """Remember that these ranges (ID -> fingerprint of the file as validated) are complete at
        ``namespace``; returns how many were new or had another fingerprint.

        Idempotent and safe to run from several processes at once (upsert, ids written in sorted order so
        concurrent batches take row locks in the same order and cannot deadlock).
        """
        check_namespace(namespace)
        ids = fingerprint_ids(fingerprints)
        changed = 0
        table = validated_ranges
        for chunk in chunks(ids, STATEMENT_CHUNK):
            now = utc_now()
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
        check_namespace(namespace)
        ids = check_range_ids(range_ids)
        found: dict[str, str] = {}
        table = validated_ranges
        for chunk in chunks(ids, STATEMENT_CHUNK):
            stmt = select(table.c.range_id, table.c.fingerprint).where(
                table.c.namespace == namespace, table.c.range_id.in_(chunk)
            )
            found.update(self._run(functools.partial(_pairs, stmt=stmt), write=False))
        return found

    def forget_validated(self, namespace: str, range_ids: Iterable[str] | None = None) -> int:
        """Drop ranges from the cache (all of ``namespace`` when ``range_ids`` is None); returns the count."""
        check_namespace(namespace)
        where = validated_ranges.c.namespace == namespace
        if range_ids is None:
            return self._run(functools.partial(rowcount, stmt=delete(validated_ranges).where(where)))
        removed = 0
        for chunk in chunks(check_range_ids(range_ids), STATEMENT_CHUNK):
            stmt = delete(validated_ranges).where(where, validated_ranges.c.range_id.in_(chunk))
            removed += self._run(functools.partial(rowcount, stmt=stmt))
        return removed

    def validated_count(self, namespace: str) -> int:
        """How many ranges are cached as validated at ``namespace`` (for status reports)."""
        check_namespace(namespace)
        stmt = select(func.count()).select_from(validated_ranges).where(validated_ranges.c.namespace == namespace)
        return self._run(lambda c: int(c.execute(stmt).scalar_one()), write=False)


def _pairs(conn: Connection, stmt: Any) -> dict[str, str]:
    return {str(key): str(value) for key, value in conn.execute(stmt).all()}
