"""The wake-up queue (``wakeups.py``) in SQLite and PostgreSQL: table ``ref_wakeups``, one row per (mirror,
ref kind, ref), queued again by an upsert that renews its time and token, claimed by an update and removed by a
delete that each hold only while the token is the one read. Table ``run_requests``: per (mirror, ref kind, ref)
the last run key a sensor requested for it, written by an upsert whose condition decides who may request."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Column, Connection, Index, String, Table, and_, delete, or_, select, update

from ..inputs import chunks
from ..wakeups import MAX_WAKEUPS, RefWakeup, check_run_request, claim_token, new_wakeup, with_token
from .schema import UTCDateTime, metadata
from .transactions import Transactions, rowcount

__all__ = ["WakeupQueue", "ref_wakeups", "run_requests"]


def _ref_key() -> list[Column[str]]:
    """The primary key of both tables: one row per (mirror, ref kind, ref)."""
    return [
        Column("mirror_id", String(64), primary_key=True),
        Column("ref_kind", String(8), primary_key=True),
        Column("ref", String(255), primary_key=True),
    ]


ref_wakeups = Table(
    "ref_wakeups",
    metadata,
    # lakeFS action hooks' wake-ups (wakeups.py), read by the mirror's destination region. No foreign key: a
    # wake-up of a mirror deleted meanwhile is read, found to name no mirror, and acknowledged. A database of
    # an older version gets this table from create_all.
    *_ref_key(),
    Column("destination_region", String(128), nullable=False),
    Column("event", String(64), nullable=False),
    Column("queued_at", UTCDateTime, nullable=False),
    Column("token", String(32), nullable=False),
)
Index("ix_ref_wakeups_destination_region", ref_wakeups.c.destination_region, ref_wakeups.c.queued_at)

run_requests = Table(
    "run_requests",
    metadata,
    # The run each ref of a mirror last got from a Dagster sensor (wakeups.py): sensors of one mirror are not
    # deduplicated by Dagster's run keys among themselves. No foreign key, as above; created by create_all.
    *_ref_key(),
    Column("run_key", String(1024), nullable=False),
    Column("requester", String(255), nullable=False),
    Column("requested_at", UTCDateTime, nullable=False),
)


class WakeupQueue(Transactions):
    """``queue_wakeup``, ``wakeups`` and ``ack_wakeups`` of ``MirrorsDatabase`` on ``ref_wakeups``."""

    def queue_wakeup(
        self, mirror_id: str, destination_region: str, kind: str, ref: str, event: str, now: datetime
    ) -> RefWakeup:
        """Queue (or queue again, with a new token) a wake-up of ``kind`` ``ref`` of the mirror."""
        wake = new_wakeup(mirror_id, destination_region, kind, ref, event, now)
        row = {
            "mirror_id": mirror_id,
            "ref_kind": kind,
            "ref": ref,
            "destination_region": destination_region,
            "event": event,
            "queued_at": now,
            "token": wake.token,
        }

        def op(conn: Connection) -> None:
            insert = self._insert(ref_wakeups).values(row)
            changed = {k: insert.excluded[k] for k in ("destination_region", "event", "queued_at", "token")}
            conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[ref_wakeups.c.mirror_id, ref_wakeups.c.ref_kind, ref_wakeups.c.ref], set_=changed
                )
            )

        self._run(op)
        return wake

    def wakeups(self, destination_region: str, *, limit: int = MAX_WAKEUPS) -> list[RefWakeup]:
        """The queued wake-ups of mirrors living in ``destination_region``, oldest first (at most ``limit``)."""
        stmt = (
            select(ref_wakeups)
            .where(ref_wakeups.c.destination_region == destination_region)
            .order_by(ref_wakeups.c.queued_at)
            .limit(max(1, min(limit, MAX_WAKEUPS)))
        )
        rows = self._run(lambda conn: conn.execute(stmt).mappings().all(), write=False)
        return [
            RefWakeup(
                r["mirror_id"], r["destination_region"], r["ref_kind"], r["ref"], r["event"], r["queued_at"], r["token"]
            )
            for r in rows
        ]

    def claim_wakeups(self, wakeups: Iterable[RefWakeup], now: datetime) -> list[RefWakeup]:
        """``MirrorsDatabase.claim_wakeups`` (SQL: a conditional UPDATE per wake-up)."""
        c = ref_wakeups.c
        claimed = []
        for w in wakeups:
            token = claim_token(now)
            stmt = (
                update(ref_wakeups)
                .where(c.mirror_id == w.mirror_id, c.ref_kind == w.kind, c.ref == w.ref, c.token == w.token)
                .values(token=token)
            )
            if self._run(functools.partial(rowcount, stmt=stmt)):
                claimed.append(with_token(w, token))
        return claimed

    def request_run(
        self, mirror_id: str, kind: str, ref: str, run_key: str, requester: str, now: datetime, *, lost_before: datetime
    ) -> bool:
        """``MirrorsDatabase.request_run``."""
        check_run_request(mirror_id, kind, ref, run_key, requester, now)
        row = {
            "mirror_id": mirror_id,
            "ref_kind": kind,
            "ref": ref,
            "run_key": run_key,
            "requester": requester,
            "requested_at": now,
        }
        c = run_requests.c

        def op(conn: Connection) -> bool:
            insert = self._insert(run_requests).values(row)
            stmt = insert.on_conflict_do_update(
                index_elements=[c.mirror_id, c.ref_kind, c.ref],
                set_={k: insert.excluded[k] for k in ("run_key", "requester", "requested_at")},
                where=or_(c.run_key != run_key, c.requester == requester, c.requested_at < lost_before),
            )
            # RETURNING, not the row count: a row comes back only when it was inserted or updated
            return conn.execute(stmt.returning(c.mirror_id)).first() is not None

        return self._run(op)

    def ack_wakeups(self, handled: Iterable[RefWakeup]) -> int:
        """Remove the wake-ups that were handled, unless queued again since (their token changed); the count."""
        items = list(handled)
        if not items:
            return 0
        c = ref_wakeups.c
        removed = 0
        for chunk in chunks(items, 200):
            match = or_(
                *(
                    and_(c.mirror_id == w.mirror_id, c.ref_kind == w.kind, c.ref == w.ref, c.token == w.token)
                    for w in chunk
                )
            )
            removed += self._run(functools.partial(rowcount, stmt=delete(ref_wakeups).where(match)))
        return removed
