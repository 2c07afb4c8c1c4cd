"""The validated-ranges cache in DynamoDB: one item per (namespace, range ID) holding the file's fingerprint.

Marking writes only the ranges that are new or changed, each on the condition that it is still absent or
holds another fingerprint, so two processes marking the same range count it once between them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..inputs import check_namespace, check_range_ids, chunks, fingerprint_ids, utc_now
from .items import encode, key, range_partition
from .table import TRANSACT_MAX, DynamoTable

__all__ = ["DynamoValidatedRanges"]


class DynamoValidatedRanges(DynamoTable):
    """Range items: partition ``validated/<sha256 of namespace>``, sort key the range ID."""

    def mark_ranges_validated(self, namespace: str, fingerprints: Mapping[str, str]) -> int:
        """Remember that these ranges (ID -> fingerprint of the file as validated) are complete at
        ``namespace``; returns how many were new or had another fingerprint. Idempotent and safe to run
        from several processes at once."""
        check_namespace(namespace)
        ids = fingerprint_ids(fingerprints)
        changed = 0
        for chunk in chunks(ids, TRANSACT_MAX):
            stored = self._fingerprints(namespace, chunk)
            now = encode(utc_now())
            actions = [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": {
                            **key(range_partition(namespace), rid),
                            "fingerprint": encode(fingerprints[rid]),
                            "validated_at": now,
                        },
                        "ConditionExpression": "attribute_not_exists(pk) OR fingerprint <> :fingerprint",
                        "ExpressionAttributeValues": {":fingerprint": encode(fingerprints[rid])},
                    }
                }
                for rid in chunk
                if stored.get(rid) != fingerprints[rid]
            ]
            changed += self._conditional_writes(actions)
        return changed

    def validated_ranges(self, namespace: str, range_ids: Iterable[str]) -> dict[str, str]:
        """The ranges of ``range_ids`` already validated at ``namespace``, each with its file's fingerprint."""
        check_namespace(namespace)
        found: dict[str, str] = {}
        for chunk in chunks(check_range_ids(range_ids), TRANSACT_MAX):
            found.update(self._fingerprints(namespace, chunk))
        return found

    def forget_validated(self, namespace: str, range_ids: Iterable[str] | None = None) -> int:
        """Drop ranges from the cache (all of ``namespace`` when ``range_ids`` is None); returns the count."""
        check_namespace(namespace)
        partition = range_partition(namespace)
        if range_ids is None:
            present = [
                item["sk"]["S"]
                for item in self._query(
                    KeyConditionExpression="pk = :pk",
                    ExpressionAttributeValues={":pk": encode(partition)},
                    ProjectionExpression="sk",
                )
            ]
        else:
            present = []
            for chunk in chunks(check_range_ids(range_ids), TRANSACT_MAX):
                present.extend(self._fingerprints(namespace, chunk))
        actions: list[dict[str, Any]] = [
            {
                "Delete": {
                    "TableName": self._table,
                    "Key": key(partition, rid),
                    "ConditionExpression": "attribute_exists(pk)",
                }
            }
            for rid in sorted(present)
        ]
        return self._conditional_writes(actions)

    def validated_count(self, namespace: str) -> int:
        """How many ranges are cached as validated at ``namespace`` (for status reports)."""
        check_namespace(namespace)
        return self._count(
            KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": encode(range_partition(namespace))}
        )

    def _fingerprints(self, namespace: str, range_ids: list[str]) -> dict[str, str]:
        """Range ID -> stored fingerprint for those of ``range_ids`` (at most 100) in the cache."""
        items = self._get_many([key(range_partition(namespace), rid) for rid in range_ids])
        return {item["sk"]["S"]: item.get("fingerprint", {"S": ""})["S"] for item in items}
