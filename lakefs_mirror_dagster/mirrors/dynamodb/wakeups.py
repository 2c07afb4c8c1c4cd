"""The wake-up queue (``mirrors/wakeups.py``) in DynamoDB: one item per (mirror, ref kind, ref) in the
partition ``wakeups/<destination region>``, so a region reads its queue with one Query. Queueing again is a
Put that renews the time and token; an ack is a Delete on the condition that the token is the one read."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..wakeups import MAX_WAKEUPS, RefWakeup, new_wakeup
from .items import Item, decode_time, encode, key
from .table import DynamoTable

__all__ = ["DynamoWakeupQueue"]


class DynamoWakeupQueue(DynamoTable):
    """``queue_wakeup``, ``wakeups`` and ``ack_wakeups`` of ``MirrorsDatabase`` on DynamoDB."""

    def queue_wakeup(
        self, mirror_id: str, destination_region: str, kind: str, ref: str, event: str, now: datetime
    ) -> RefWakeup:
        """Queue (or queue again, with a new token) a wake-up of ``kind`` ``ref`` of the mirror."""
        wake = new_wakeup(mirror_id, destination_region, kind, ref, event, now)
        item = {
            **_wakeup_key(wake),
            "mirror_id": encode(mirror_id),
            "ref_kind": encode(kind),
            "ref": encode(ref),
            "event": encode(event),
            "queued_at": encode(now),
            "token": encode(wake.token),
        }
        self._call("put_item", TableName=self._table, Item=item)
        return wake

    def wakeups(self, destination_region: str, *, limit: int = MAX_WAKEUPS) -> list[RefWakeup]:
        """The queued wake-ups of mirrors living in ``destination_region``, oldest first (at most ``limit``)."""
        items = self._query(
            KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": encode(_partition(destination_region))}
        )
        found = [_to_wakeup(destination_region, item) for item in items]
        found.sort(key=lambda w: w.queued_at)
        return found[: max(1, min(limit, MAX_WAKEUPS))]

    def ack_wakeups(self, handled: Iterable[RefWakeup]) -> int:
        """Remove the wake-ups that were handled, unless queued again since (their token changed); the count."""
        actions: list[dict[str, Any]] = [
            {
                "Delete": {
                    "TableName": self._table,
                    "Key": _wakeup_key(w),
                    "ConditionExpression": "#token = :token",
                    "ExpressionAttributeNames": {"#token": "token"},
                    "ExpressionAttributeValues": {":token": encode(w.token)},
                }
            }
            for w in handled
        ]
        return self._conditional_writes(actions)


def _partition(destination_region: str) -> str:
    return f"wakeups/{destination_region}"


def _wakeup_key(wake: RefWakeup) -> Item:
    return key(_partition(wake.destination_region), f"{wake.mirror_id}\0{wake.kind}\0{wake.ref}")


def _to_wakeup(destination_region: str, item: Item) -> RefWakeup:
    queued_at = decode_time(item["queued_at"])
    assert queued_at is not None
    return RefWakeup(
        item["mirror_id"]["S"],
        destination_region,
        item["ref_kind"]["S"],
        item["ref"]["S"],
        item["event"]["S"],
        queued_at,
        item["token"]["S"],
    )
