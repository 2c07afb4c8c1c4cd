"""Mirror records in DynamoDB: create, read, list and delete them, and move them between states.

A mirror is created in one transaction with its name claim and its namespace claim, each written only if
absent, so two regions creating the same name or namespace never both win. A state change is an update on
the condition that the generation is still the one read. Deleting removes the mirror and its name claim in
one transaction, then its branches, garbage-collection marks and validated ranges, and last the namespace
claim: until that claim is gone no new mirror can use the namespace, and a create that finds a claim whose
mirror is gone (a delete that was interrupted) finishes that cleanup first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from typing import Any

from ..errors import MirrorNotFound
from ..inputs import (
    DEFAULT_PAGE_SIZE,
    check_expected_generation,
    check_page_size,
    check_transition,
    id_taken,
    message_text,
    mirror_row,
    name_taken,
    namespace_taken,
    page_of,
    state_values,
    utc_now,
    with_state,
)
from ..models import Mirror, MirrorPage, MirrorState, validation_namespace
from ..races import LostRace, conflict, settle
from .items import (
    MIRRORS,
    Item,
    branch_partition,
    encode,
    gc_partition,
    in_flight_partition,
    key,
    mirror_item,
    name_key,
    namespace_key,
    range_partition,
    to_mirror,
)
from .table import Cancelled, ConditionFailed, DynamoTable

__all__ = ["DynamoMirrorRecords"]

_ABSENT = "attribute_not_exists(pk)"
#: Reads of a name claim and then its mirror, when a concurrent delete or create changed them in between.
_NAME_READS = 3


class DynamoMirrorRecords(DynamoTable):
    """Mirror items, with their name and namespace claims."""

    def create_mirror(
        self,
        *,
        organization_id: str,
        source_region: str,
        source_repository: str,
        name: str,
        destination_region: str,
        storage_namespace: str,
        storage_id: str = "",
        mirror_id: str | None = None,
        state: MirrorState | str = MirrorState.PENDING,
        message: str = "",
    ) -> Mirror:
        """Record a new mirror (generation 1); ``MirrorExists`` when the name (or id) is taken in the region,
        ``NamespaceInUse`` when another mirror there writes to the namespace."""
        row = mirror_row(
            organization_id=organization_id,
            source_region=source_region,
            source_repository=source_repository,
            name=name,
            destination_region=destination_region,
            storage_namespace=storage_namespace,
            storage_id=storage_id,
            mirror_id=mirror_id,
            state=state,
            message=message,
        )
        owner = {"mirror_id": encode(row["id"])}
        space = {
            "destination_region": encode(destination_region),
            "storage_id": encode(storage_id),
            "storage_namespace": encode(storage_namespace),
        }
        claims = [
            mirror_item(row),
            {**name_key(destination_region, name), **owner},
            {**namespace_key(destination_region, storage_id, storage_namespace), **owner, **space},
        ]
        actions = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": item,
                    "ConditionExpression": _ABSENT,
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
            for item in claims
        ]
        for _attempt in range(2):  # a second time after finishing an interrupted delete of the namespace's mirror
            try:
                self._transact(actions)
                return to_mirror(mirror_item(row))
            except Cancelled as cancelled:
                failed = cancelled.failed
            if 0 in failed:
                raise id_taken(row)
            if 1 in failed:
                raise name_taken(row, self._owner(failed[1], name_key(destination_region, name)))
            namespace_claim = failed[2] or self._get(namespace_key(destination_region, storage_id, storage_namespace))
            holder = self._owner(namespace_claim, None)
            if holder is None and namespace_claim is not None:
                self._release_namespace(namespace_claim)
                continue
            raise namespace_taken(row, holder)
        raise namespace_taken(row, None)

    def get_mirror(self, mirror_id: str) -> Mirror:
        """The mirror with this id; ``MirrorNotFound`` if there is none."""
        found = self._find(mirror_id)
        if found is None:
            raise MirrorNotFound(f"no mirror with id {mirror_id!r}", mirror_id=mirror_id)
        return found

    def get_by_name(self, region: str, name: str) -> Mirror:
        """The mirror repository ``name`` in destination ``region``; ``MirrorNotFound`` if none."""
        for _ in range(_NAME_READS):
            claim = self._get(name_key(region, name))
            if claim is None:
                break
            found = self._find(claim["mirror_id"]["S"])
            if found is not None and found.destination_region == region and found.name == name:
                return found
        raise MirrorNotFound(f"no mirror named {name!r} in region {region!r}")

    def list_mirrors(
        self,
        *,
        source_repository: str | None = None,
        destination_region: str | None = None,
        states: Collection[MirrorState | str] | None = None,
        organization_id: str | None = None,
        source_region: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        after: str | None = None,
    ) -> MirrorPage:
        """One page of mirrors ordered by id (creation order); ``after`` is the previous ``next_after``."""
        check_page_size(page_size)
        wanted_states = state_values(states)
        names: dict[str, str] = {"#pk": "pk"}
        values: dict[str, Any] = {":pk": encode(MIRRORS)}
        condition = "#pk = :pk"
        if after is not None:
            names["#sk"] = "sk"
            values[":after"] = encode(after)
            condition += " AND #sk > :after"
        filters = []
        for field, wanted in (
            ("source_repository", source_repository),
            ("destination_region", destination_region),
            ("organization_id", organization_id),
            ("source_region", source_region),
        ):
            if wanted is not None:
                names[f"#{field}"] = field
                values[f":{field}"] = encode(wanted)
                filters.append(f"#{field} = :{field}")
        if wanted_states is not None:
            names["#state"] = "state"
            options = [f":state{i}" for i in range(len(wanted_states))]
            values.update({o: encode(s) for o, s in zip(options, wanted_states, strict=True)})
            filters.append(f"#state IN ({', '.join(options)})" if options else "attribute_not_exists(#state)")
        query: dict[str, Any] = {
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "Limit": page_size + 1,
        }
        if filters:
            query["FilterExpression"] = " AND ".join(filters)
        found: list[Mirror] = []
        start: Item | None = None
        while len(found) <= page_size:
            page_args = {"TableName": self._table, "ConsistentRead": True, **query}
            if start is not None:
                page_args["ExclusiveStartKey"] = start
            answer = self._call("query", **page_args)
            found.extend(to_mirror(item) for item in answer.get("Items", []))
            start = answer.get("LastEvaluatedKey")
            if start is None:
                break
        return page_of(found[: page_size + 1], page_size)

    def set_state(
        self,
        mirror_id: str,
        state: MirrorState | str,
        message: str,
        expected_generation: int | None,
    ) -> Mirror:
        """Compare-and-set the state (see ``MirrorStore.set_state``); the update holds only while the mirror
        is still at the generation read."""
        new_state = MirrorState.parse(state)
        text_message = message_text(message)
        check_expected_generation(expected_generation)

        def attempt() -> Mirror:
            current = self.get_mirror(mirror_id)
            check_transition(current, new_state, expected_generation)
            now = utc_now()
            try:
                self._call(
                    "update_item",
                    TableName=self._table,
                    Key=key(MIRRORS, mirror_id),
                    UpdateExpression="SET #state = :state, #message = :message, updated_at = :now, generation = :next",
                    ConditionExpression="generation = :seen",
                    ExpressionAttributeNames={"#state": "state", "#message": "message"},
                    ExpressionAttributeValues={
                        ":state": encode(new_state.value),
                        ":message": encode(text_message),
                        ":now": encode(now),
                        ":next": encode(current.generation + 1),
                        ":seen": encode(current.generation),
                    },
                )
            except ConditionFailed:
                raise LostRace from None
            return with_state(current, state=new_state, message=text_message, updated_at=now)

        return settle(attempt, mirror_id, expected_generation)

    def delete_mirror(self, mirror_id: str, *, expected_generation: int | None = None) -> bool:
        """Remove the mirror record, its branches and its validated-ranges cache (a later mirror on the same
        namespace must not trust ranges deleted with the old repository); False if there was no such mirror."""

        def attempt() -> Mirror | None:
            current = self._find(mirror_id)
            if current is None:
                return None
            if expected_generation is not None and current.generation != expected_generation:
                raise conflict(mirror_id, expected_generation, current.generation)
            try:
                self._transact(
                    [
                        {
                            "Delete": {
                                "TableName": self._table,
                                "Key": key(MIRRORS, mirror_id),
                                "ConditionExpression": "generation = :seen",
                                "ExpressionAttributeValues": {":seen": encode(current.generation)},
                            }
                        },
                        {
                            "Delete": {
                                "TableName": self._table,
                                "Key": name_key(current.destination_region, current.name),
                                "ConditionExpression": "mirror_id = :id",
                                "ExpressionAttributeValues": {":id": encode(mirror_id)},
                            }
                        },
                    ]
                )
            except Cancelled:
                raise LostRace from None
            return current

        deleted = settle(attempt, mirror_id, expected_generation)
        if deleted is None:
            return False
        claim = self._get(namespace_key(deleted.destination_region, deleted.storage_id, deleted.storage_namespace))
        if claim is not None:
            self._release_namespace(claim)
        return True

    # ------------------------------------------------------------------ helpers
    def _find(self, mirror_id: str) -> Mirror | None:
        item = self._get(key(MIRRORS, mirror_id))
        return to_mirror(item) if item is not None else None

    def _owner(self, claim: Item | None, claim_key: Item | None) -> Mirror | None:
        """The mirror a claim names (the claim re-read at ``claim_key`` when the failure did not return it)."""
        if claim is None and claim_key is not None:
            claim = self._get(claim_key)
        if claim is None or "mirror_id" not in claim:
            return None
        return self._find(claim["mirror_id"]["S"])

    def _release_namespace(self, claim: Item) -> None:
        """Finish deleting the mirror a namespace claim names: its branches, its garbage-collection marks, its refs
        in flight and the namespace's validated ranges, then the claim itself (only if it still names that mirror).
        Idempotent."""
        owner = claim["mirror_id"]["S"]
        if self._find(owner) is not None:
            return
        namespace = validation_namespace(
            claim["destination_region"]["S"], claim["storage_id"]["S"], claim["storage_namespace"]["S"]
        )
        owned = (branch_partition(owner), gc_partition(owner), in_flight_partition(owner))
        for partition in (*owned, range_partition(namespace)):
            stale = self._query(
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": encode(partition)},
                ProjectionExpression="pk, sk",
            )
            self._conditional_writes([{"Delete": {"TableName": self._table, "Key": item}} for item in stale])
        # The condition fails when another process released it first (and a new mirror may hold it now).
        with contextlib.suppress(ConditionFailed):
            self._call(
                "delete_item",
                TableName=self._table,
                Key={"pk": claim["pk"], "sk": claim["sk"]},
                ConditionExpression="mirror_id = :id",
                ExpressionAttributeValues={":id": encode(owner)},
            )
