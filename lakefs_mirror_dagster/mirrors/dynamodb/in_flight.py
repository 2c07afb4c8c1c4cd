"""The refs in flight in DynamoDB (see ``mirrors/in_flight_model.py`` for what a record means).

One item per (mirror, kind, ref) in partition ``in_flight/<mirror id>``, sort key ``<kind>/<ref>``. A write is one
transaction with a check that the mirror still exists, so no record outlives a deleted mirror; the items of a
deleted mirror are removed with its other partitions.
"""

from __future__ import annotations

from ..errors import MirrorNotFound
from ..in_flight_model import COUNTERS, RefInFlight, check_in_flight
from .items import MIRRORS, Item, decode_time, encode, in_flight_partition, key
from .table import Cancelled, DynamoTable

__all__ = ["DynamoInFlightRecords"]


class DynamoInFlightRecords(DynamoTable):
    """In-flight items: the record's fields as attributes, counters as numbers, times as ISO 8601 strings."""

    def put_in_flight(self, record: RefInFlight) -> None:
        """Write (or overwrite) the record of a ref in flight; ``MirrorNotFound`` for an unknown mirror."""
        row = check_in_flight(record).as_row()
        item = {**_key(record.mirror_id, record.kind, record.ref), **{k: encode(v) for k, v in row.items()}}
        exists = {"TableName": self._table, "Key": key(MIRRORS, record.mirror_id)}
        try:
            self._transact(
                [
                    {"ConditionCheck": {**exists, "ConditionExpression": "attribute_exists(pk)"}},
                    {"Put": {"TableName": self._table, "Item": item}},
                ]
            )
        except Cancelled:
            raise MirrorNotFound(f"no mirror with id {record.mirror_id!r}", mirror_id=record.mirror_id) from None

    def clear_in_flight(self, mirror_id: str, kind: str, ref: str) -> bool:
        """Remove the record of a ref that is done; False if there was none."""
        answer = self._call(
            "delete_item", TableName=self._table, Key=_key(mirror_id, kind, ref), ReturnValues="ALL_OLD"
        )
        return bool(answer.get("Attributes"))

    def refs_in_flight(self, mirror_id: str) -> list[RefInFlight]:
        """The mirror's records, by kind and ref (stale ones included: readers decide)."""
        items = self._query(
            KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": encode(in_flight_partition(mirror_id))}
        )
        return sorted((_record(item) for item in items), key=lambda r: (r.kind, r.ref))


def _key(mirror_id: str, kind: str, ref: str) -> Item:
    return key(in_flight_partition(mirror_id), f"{kind}/{ref}")


def _record(item: Item) -> RefInFlight:
    started_at, updated_at = decode_time(item["started_at"]), decode_time(item["updated_at"])
    assert started_at is not None and updated_at is not None
    return RefInFlight(
        mirror_id=item["mirror_id"]["S"],
        kind=item["kind"]["S"],
        ref=item["ref"]["S"],
        source_commit_id=item["source_commit_id"]["S"],
        started_at=started_at,
        updated_at=updated_at,
        **{name: int(item[name]["N"]) for name in COUNTERS},
    )
