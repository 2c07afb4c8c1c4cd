"""The wake-up queue (``mirrors/wakeups.py``) in DynamoDB: one item per (mirror, ref kind, ref) in the
partition ``wakeups/<destination region>``, so a region reads its queue with one Query. Queueing again is a
Put that renews the time and token; a claim is an Update and an ack a Delete, each on the condition that the token
is the one read. The run each ref last got from a sensor is one item per (mirror, ref kind, ref) in the partition
``run_requests/<mirror id>``, written by a conditional Put."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ..wakeups import MAX_WAKEUPS, RefWakeup, check_run_request, claim_token, new_wakeup, with_token
from .items import Item, decode_time, encode, key
from .table import ConditionFailed, DynamoTable

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

    def claim_wakeups(self, wakeups: Iterable[RefWakeup], now: datetime) -> list[RefWakeup]:
        """``MirrorsDatabase.claim_wakeups`` (DynamoDB: a conditional UpdateItem per wake-up)."""
        claimed = []
        for w in wakeups:
            token = claim_token(now)
            try:
                self._call(
                    "update_item",
                    TableName=self._table,
                    Key=_wakeup_key(w),
                    UpdateExpression="SET #token = :new",
                    ConditionExpression="#token = :old",
                    ExpressionAttributeNames={"#token": "token"},
                    ExpressionAttributeValues={":new": encode(token), ":old": encode(w.token)},
                )
            except ConditionFailed:
                continue
            claimed.append(with_token(w, token))
        return claimed

    def request_run(
        self, mirror_id: str, kind: str, ref: str, run_key: str, requester: str, now: datetime, *, lost_before: datetime
    ) -> bool:
        """``MirrorsDatabase.request_run``."""
        check_run_request(mirror_id, kind, ref, run_key, requester, now)
        item = {
            **key(f"run_requests/{mirror_id}", f"{kind}\0{ref}"),
            "run_key": encode(run_key),
            "requester": encode(requester),
            "requested_at": encode(now),
        }
        try:
            self._call(
                "put_item",
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk) OR run_key <> :key OR requester = :requester"
                " OR requested_at < :lost",
                ExpressionAttributeValues={
                    ":key": encode(run_key),
                    ":requester": encode(requester),
                    ":lost": encode(lost_before),
                },
            )
        except ConditionFailed:
            return False
        return True

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
