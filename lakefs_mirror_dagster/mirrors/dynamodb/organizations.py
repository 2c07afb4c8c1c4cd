"""The organisations sharing the mirrors database, in DynamoDB (see ``mirrors/organizations.py`` for why).

The first region's item is written only if absent; every region then reads back the one item that won.
"""

from __future__ import annotations

import contextlib

from ..inputs import check, utc_now
from ..models import PLAIN_ID
from ..organizations import Organization
from .items import ORGANIZATIONS, decode_time, encode, key
from .table import ConditionFailed, DynamoTable

__all__ = ["DynamoOrganizationRecords"]


class DynamoOrganizationRecords(DynamoTable):
    """Organisation items: partition ``organizations``, sort key the organization id."""

    def claim_organization(self, organization_id: str, fingerprint: str, region: str) -> Organization:
        """Record ``organization_id`` with ``fingerprint`` unless it is recorded already; returns the item as
        it is now (the first claimant's)."""
        check(PLAIN_ID, "organization_id", organization_id)
        item_key = key(ORGANIZATIONS, organization_id)
        # Recorded before when the condition fails: then the recorded fingerprint is the one to match.
        with contextlib.suppress(ConditionFailed):
            self._call(
                "put_item",
                TableName=self._table,
                Item={
                    **item_key,
                    "key_fingerprint": encode(fingerprint),
                    "first_region": encode(region),
                    "created_at": encode(utc_now()),
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        found = self._get(item_key)
        if found is None:
            raise AssertionError(f"organization {organization_id!r} vanished right after it was claimed")
        created_at = decode_time(found["created_at"])
        assert created_at is not None
        return Organization(
            organization_id=organization_id,
            key_fingerprint=found["key_fingerprint"]["S"],
            first_region=found["first_region"]["S"],
            created_at=created_at,
        )

    def organization_ids(self) -> list[str]:
        """Every organisation recorded in the database, sorted."""
        items = self._query(
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": encode(ORGANIZATIONS)},
            ProjectionExpression="sk",
        )
        return sorted(item["sk"]["S"] for item in items)
