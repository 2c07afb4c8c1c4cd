"""Per-branch state of a mirror: the source head the sensor saw, the mirrored commit, when, and the lag."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlalchemy.exc import IntegrityError

from .errors import InvalidMirrorSpec, MirrorNotFound
from .models import MirrorBranch
from .rows import select_mirror, utc_now
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
        changes["updated_at"] = utc_now()

        def op(conn: Connection) -> MirrorBranch:
            if select_mirror(conn, mirror_id) is None:
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
        )
        for r in conn.execute(stmt.order_by(mirror_branches.c.branch)).mappings()
    ]


def _check_branch(branch: object) -> None:
    if not isinstance(branch, str) or not 0 < len(branch) <= 255 or branch.strip() != branch:
        raise InvalidMirrorSpec(f"invalid branch name {branch!r}")
