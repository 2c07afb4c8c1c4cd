"""Per-branch state of a mirror: the source head the sensor saw, the mirrored commit, when, and the lag, and
while a sync is blocked, when it may be tried again."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, case, delete, select
from sqlalchemy.exc import IntegrityError

from ..errors import MirrorNotFound
from ..inputs import block_fields, branch_changes, utc_now
from ..models import MirrorBranch
from .rows import select_mirror
from .schema import mirror_branches
from .transactions import Transactions

__all__ = ["BranchRecords"]


class BranchRecords(Transactions):
    """The ``mirror_branches`` table: one row per mirror and branch."""

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
        unblock: bool = False,
    ) -> MirrorBranch:
        """Upsert what we know about a branch; arguments left as None keep their stored value.

        The sensor records the source head it saw; the promote step records the mirrored commit, when,
        and the lag. Both may write at once: each row update is atomic and touches only its own fields.
        ``unblock`` also clears the retry schedule (``block_branch``): the branch synced.
        """
        changes = branch_changes(
            branch,
            source_commit_id=source_commit_id,
            source_commit_time=source_commit_time,
            mirrored_commit_id=mirrored_commit_id,
            promoted_at=promoted_at,
            lag_seconds=lag_seconds,
            unblock=unblock,
        )
        return self._upsert(mirror_id, branch, changes, changes)

    def block_branch(
        self, mirror_id: str, branch: str, *, commit_id: str, reason: str, retry_after: datetime
    ) -> MirrorBranch:
        """Record that syncing ``branch`` to source commit ``commit_id`` was blocked, why, and the earliest
        time to try again. ``blocked_attempts`` counts the blocked tries of that same commit (1 for the
        first), in the database itself, so two writers never both count the same number."""
        fields = block_fields(branch, commit_id=commit_id, reason=reason, retry_after=retry_after)
        same = mirror_branches.c.blocked_commit_id == commit_id
        attempts = case((same, mirror_branches.c.blocked_attempts + 1), else_=1)
        now = utc_now()
        return self._upsert(
            mirror_id,
            branch,
            {**fields, "blocked_attempts": 1, "updated_at": now},
            {**fields, "blocked_attempts": attempts, "updated_at": now},
        )

    def _upsert(self, mirror_id: str, branch: str, insert: dict[str, Any], update: dict[str, Any]) -> MirrorBranch:
        """Insert the branch row with ``insert``, or update the existing one with ``update``; the row after."""

        def op(conn: Connection) -> MirrorBranch:
            if select_mirror(conn, mirror_id) is None:
                raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
            stmt = self._insert(mirror_branches).values(mirror_id=mirror_id, branch=branch, **insert)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[mirror_branches.c.mirror_id, mirror_branches.c.branch], set_=update
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
            if select_mirror(conn, mirror_id) is None:
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
            blocked_commit_id=r["blocked_commit_id"],
            blocked_reason=r["blocked_reason"],
            retry_after=r["retry_after"],
            blocked_attempts=int(r["blocked_attempts"] or 0),
        )
        for r in conn.execute(stmt.order_by(mirror_branches.c.branch)).mappings()
    ]
