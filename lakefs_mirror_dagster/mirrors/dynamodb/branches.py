"""Per-branch state of a mirror in DynamoDB (see ``mirrors/sql/branches.py`` for what the fields mean).

Each write is one transaction: a check that the mirror still exists and the update of the branch item, so
no branch is ever written for a deleted mirror. ``block_branch`` counts attempts by compare-and-set on the
values it read, so two writers never both count the same number.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import MirrorNotFound
from ..inputs import block_fields, branch_changes, utc_now
from ..models import MirrorBranch
from ..races import LostRace, settle
from .items import MIRRORS, Item, branch_partition, encode, key, to_branch
from .table import Cancelled, DynamoTable

__all__ = ["DynamoBranchRecords"]


class DynamoBranchRecords(DynamoTable):
    """Branch items: partition ``branches/<mirror id>``, sort key the branch name."""

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
        """Upsert what we know about a branch; arguments left as None keep their stored value, ``unblock``
        clears the retry schedule. Each update touches only its own fields."""
        changes = branch_changes(
            branch,
            source_commit_id=source_commit_id,
            source_commit_time=source_commit_time,
            mirrored_commit_id=mirrored_commit_id,
            promoted_at=promoted_at,
            lag_seconds=lag_seconds,
            unblock=unblock,
        )
        self._write_branch(mirror_id, branch, changes, condition=None, condition_values={})
        return self._read_branch(mirror_id, branch)

    def block_branch(
        self, mirror_id: str, branch: str, *, commit_id: str, reason: str, retry_after: datetime
    ) -> MirrorBranch:
        """Record that syncing ``branch`` to ``commit_id`` was blocked, why, and when to try again;
        ``blocked_attempts`` counts the blocked tries of that same commit (1 for the first)."""
        fields = block_fields(branch, commit_id=commit_id, reason=reason, retry_after=retry_after)

        def attempt() -> None:
            seen = self._get(key(branch_partition(mirror_id), branch))
            values: dict[str, Any] = {}
            if seen is None:
                attempts, condition = 1, "attribute_not_exists(pk)"
            else:
                before = to_branch(seen)
                attempts = before.blocked_attempts + 1 if before.blocked_commit_id == commit_id else 1
                condition = "blocked_attempts = :seen_attempts AND "
                values[":seen_attempts"] = encode(before.blocked_attempts)
                if before.blocked_commit_id is None:
                    condition += "attribute_not_exists(blocked_commit_id)"
                else:
                    condition += "blocked_commit_id = :seen_commit"
                    values[":seen_commit"] = encode(before.blocked_commit_id)
            changes = {**fields, "blocked_attempts": attempts, "updated_at": utc_now()}
            if not self._write_branch(mirror_id, branch, changes, condition=condition, condition_values=values):
                raise LostRace

        settle(attempt, mirror_id, None)
        return self._read_branch(mirror_id, branch)

    def get_branches(self, mirror_id: str) -> list[MirrorBranch]:
        """All recorded branches of a mirror, by name; ``MirrorNotFound`` for an unknown mirror."""
        if self._get(key(MIRRORS, mirror_id)) is None:
            raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
        items = self._query(
            KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": encode(branch_partition(mirror_id))}
        )
        return [to_branch(item) for item in items]

    def get_branch(self, mirror_id: str, branch: str) -> MirrorBranch | None:
        """One recorded branch, or None if nothing was recorded for it."""
        item = self._get(key(branch_partition(mirror_id), branch))
        return to_branch(item) if item is not None else None

    def delete_branch(self, mirror_id: str, branch: str) -> bool:
        """Forget a branch (deleted at the source); False if it was not recorded."""
        answer = self._call(
            "delete_item", TableName=self._table, Key=key(branch_partition(mirror_id), branch), ReturnValues="ALL_OLD"
        )
        return bool(answer.get("Attributes"))

    # ------------------------------------------------------------------ helpers
    def _write_branch(
        self,
        mirror_id: str,
        branch: str,
        changes: dict[str, Any],
        *,
        condition: str | None,
        condition_values: dict[str, Any],
    ) -> bool:
        """Set the given fields (None removes one) while the mirror exists; False when ``condition`` on the
        branch item failed, ``MirrorNotFound`` when the mirror is gone."""
        names: dict[str, str] = {}
        values: dict[str, Any] = {":mirror_id": encode(mirror_id), **condition_values}
        sets = ["mirror_id = :mirror_id"]
        removes = []
        for index, (field, value) in enumerate(changes.items()):
            names[f"#f{index}"] = field
            if value is None:
                removes.append(f"#f{index}")
            else:
                values[f":v{index}"] = encode(value)
                sets.append(f"#f{index} = :v{index}")
        if "blocked_attempts" not in changes:
            names["#attempts"] = "blocked_attempts"
            values[":zero"] = encode(0)
            sets.append("#attempts = if_not_exists(#attempts, :zero)")
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        update: Item = {
            "TableName": self._table,
            "Key": key(branch_partition(mirror_id), branch),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if condition is not None:
            update["ConditionExpression"] = condition
        exists = {
            "TableName": self._table,
            "Key": key(MIRRORS, mirror_id),
            "ConditionExpression": "attribute_exists(pk)",
        }
        try:
            self._transact([{"ConditionCheck": exists}, {"Update": update}])
        except Cancelled as cancelled:
            if 0 in cancelled.failed:
                raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id) from None
            return False
        return True

    def _read_branch(self, mirror_id: str, branch: str) -> MirrorBranch:
        found = self.get_branch(mirror_id, branch)
        if found is None:  # deleted by delete_branch or with the mirror right after our write
            raise MirrorNotFound(f"no mirror with id {mirror_id!r} (or its branch {branch!r} was just removed)")
        return found
