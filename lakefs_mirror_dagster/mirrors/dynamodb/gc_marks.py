"""Garbage-collection marks in DynamoDB (see ``mirrors/sql/gc_marks.py`` for the grace period they keep).

One item per (mirror, address): noting sets ``last_missing_at`` and sets ``first_missing_at`` only if absent,
in one update, so a first sighting is never moved. A sweep deletes a mark only on the condition that it was not
noted again since the pass began.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..errors import MirrorNotFound
from ..inputs import check_gc_time, chunks, gc_addresses
from .items import MIRRORS, Item, decode_time, encode, gc_partition, key
from .table import TRANSACT_MAX, Cancelled, DynamoTable

__all__ = ["DynamoGcMarks"]


class DynamoGcMarks(DynamoTable):
    """Mark items: partition ``gc/<mirror id>``, sort key a digest of the address (which may be longer than a
    sort key may be); the address itself is an attribute."""

    def note_missing(self, mirror_id: str, addresses: Iterable[str], now: datetime) -> dict[str, datetime]:
        """Mark ``addresses`` missing at ``now`` (new marks start their grace period then; existing ones keep
        their first sighting); returns each address's first sighting. ``MirrorNotFound`` for an unknown mirror."""
        check_gc_time(now)
        firsts: dict[str, datetime] = {}
        exists = {
            "TableName": self._table,
            "Key": key(MIRRORS, mirror_id),
            "ConditionExpression": "attribute_exists(pk)",
        }
        for chunk in chunks(gc_addresses(addresses), TRANSACT_MAX - 1):
            updates = [
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": _mark_key(mirror_id, address),
                        "UpdateExpression": "SET address = :address, last_missing_at = :now, "
                        "first_missing_at = if_not_exists(first_missing_at, :now)",
                        "ExpressionAttributeValues": {":address": encode(address), ":now": encode(now)},
                    }
                }
                for address in chunk
            ]
            try:
                self._transact([{"ConditionCheck": exists}, *updates])
            except Cancelled:
                raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id) from None
            firsts.update(self._firsts(mirror_id, chunk))
        return firsts

    def missing_since(self, mirror_id: str, addresses: Iterable[str]) -> dict[str, datetime]:
        """The first sighting of each of ``addresses`` that is marked (a read: what a dry run uses)."""
        firsts: dict[str, datetime] = {}
        for chunk in chunks(gc_addresses(addresses), TRANSACT_MAX):
            firsts.update(self._firsts(mirror_id, chunk))
        return firsts

    def forget_missing(self, mirror_id: str, addresses: Iterable[str]) -> int:
        """Drop the marks of ``addresses``; returns how many there were."""
        actions: list[dict[str, Any]] = []
        for chunk in chunks(gc_addresses(addresses), TRANSACT_MAX):
            actions.extend(
                _delete(self._table, mirror_id, a, "attribute_exists(pk)") for a in self._firsts(mirror_id, chunk)
            )
        return self._conditional_writes(actions)

    def sweep_missing(self, mirror_id: str, not_seen_since: datetime) -> int:
        """Drop the marks a complete pass that started at ``not_seen_since`` did not see missing; returns the count.
        A mark noted again meanwhile (by a later pass) is kept: the delete holds only while it is older."""
        check_gc_time(not_seen_since)
        since = encode(not_seen_since)
        stale = self._query(
            KeyConditionExpression="pk = :pk",
            FilterExpression="last_missing_at < :since",
            ExpressionAttributeValues={":pk": encode(gc_partition(mirror_id)), ":since": since},
            ProjectionExpression="address",
        )
        actions = [_delete(self._table, mirror_id, item["address"]["S"], "last_missing_at < :since") for item in stale]
        for action in actions:
            action["Delete"]["ExpressionAttributeValues"] = {":since": since}
        return self._conditional_writes(actions)

    def missing_count(self, mirror_id: str) -> int:
        """How many objects of the mirror are marked missing at its source."""
        return self._count(
            KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": encode(gc_partition(mirror_id))}
        )

    def _firsts(self, mirror_id: str, addresses: list[str]) -> dict[str, datetime]:
        """Address -> first sighting of those of ``addresses`` (at most 100) that are marked."""
        items: list[Item] = self._get_many([_mark_key(mirror_id, a) for a in addresses])
        found: dict[str, datetime] = {}
        for item in items:
            first = decode_time(item["first_missing_at"])
            assert first is not None
            found[item["address"]["S"]] = first
        return found


def _mark_key(mirror_id: str, address: str) -> Item:
    return key(gc_partition(mirror_id), hashlib.sha256(address.encode()).hexdigest())


def _delete(table: str, mirror_id: str, address: str, condition: str) -> dict[str, Any]:
    return {"Delete": {"TableName": table, "Key": _mark_key(mirror_id, address), "ConditionExpression": condition}}
