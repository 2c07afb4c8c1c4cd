"""How the mirrors database lies in one DynamoDB table: the keys of each kind of item, and values both ways.

One table, string keys ``pk`` and ``sk`` (the layout is written out above ``KEY_ATTRIBUTES``). All mirrors share
one partition so a strongly consistent Query lists them in id order, as the SQL store does; uniqueness is
claim items written in the mirror's transaction. Namespaces are hashed into keys (they may be longer than a
key); times are ISO 8601 UTC strings; absent optional fields are absent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..models import Mirror, MirrorBranch, MirrorState

__all__ = [
    "KEY_ATTRIBUTES",
    "MIRRORS",
    "ORGANIZATIONS",
    "Item",
    "branch_partition",
    "decode_time",
    "encode",
    "gc_partition",
    "in_flight_partition",
    "key",
    "mirror_item",
    "name_key",
    "namespace_key",
    "range_partition",
    "to_branch",
    "to_mirror",
]

#: A DynamoDB item in the low-level client's form: attribute name -> {"S": ...} / {"N": ...}.
Item = dict[str, Any]

# item                                   pk                                  sk
# mirror                                 mirrors                             mirror id (ids sort by creation time)
# name claim (one name per region)       name/<region>/<name>                -
# namespace claim (one per region+store) namespace/<sha256>                  -
# branch of a mirror                     branches/<mirror id>                branch name
# validated range                        validated/<sha256 of namespace>     range id
# garbage-collection mark                gc/<mirror id>                      sha256 of the object's address
# ref in flight (in_flight.py)           in_flight/<mirror id>               <kind>/<ref>
# organisation                           organizations                       organization id
# hook wake-up (wakeups.py)              wakeups/<region>                    <mirror id> <kind> <ref>
# a ref's last sensor run request        run_requests/<mirror id>            <kind> <ref>
KEY_ATTRIBUTES = ("pk", "sk")
MIRRORS = "mirrors"
ORGANIZATIONS = "organizations"
_CLAIM = "-"


def key(pk: str, sk: str) -> Item:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def name_key(region: str, name: str) -> Item:
    """The claim of mirror name ``name`` in destination ``region`` (neither may contain ``/``)."""
    return key(f"name/{region}/{name}", _CLAIM)


def namespace_key(region: str, storage_id: str, storage_namespace: str) -> Item:
    """The claim of a storage namespace of one store in one destination region."""
    digest = hashlib.sha256(f"{region}\0{storage_id}\0{storage_namespace}".encode()).hexdigest()
    return key(f"namespace/{digest}", _CLAIM)


def branch_partition(mirror_id: str) -> str:
    return f"branches/{mirror_id}"


def gc_partition(mirror_id: str) -> str:
    return f"gc/{mirror_id}"


def in_flight_partition(mirror_id: str) -> str:
    return f"in_flight/{mirror_id}"


def range_partition(namespace: str) -> str:
    """The partition of one validated-ranges namespace (a ``validation_namespace`` may be 1400 characters)."""
    return f"validated/{hashlib.sha256(namespace.encode()).hexdigest()}"


def encode(value: object) -> dict[str, str]:
    """One attribute value: str, int, float or an aware datetime (ISO 8601 UTC with microseconds always, so
    that times compare as strings in conditions)."""
    if isinstance(value, datetime):
        return {"S": value.astimezone(UTC).isoformat(timespec="microseconds")}
    if isinstance(value, bool):
        raise TypeError("booleans are not stored")
    if isinstance(value, int | float):
        return {"N": repr(value)}
    if isinstance(value, str):
        return {"S": value}
    raise TypeError(f"cannot store {type(value).__name__}")


def decode_time(attribute: Mapping[str, str] | None) -> datetime | None:
    return None if attribute is None else datetime.fromisoformat(attribute["S"]).astimezone(UTC)


def _text(item: Item, name: str) -> str | None:
    attribute = item.get(name)
    return None if attribute is None else str(attribute["S"])


def _number(item: Item, name: str) -> float | None:
    attribute = item.get(name)
    return None if attribute is None else float(attribute["N"])


def mirror_item(row: Mapping[str, Any]) -> Item:
    """The item of a mirror from its fields (``inputs.mirror_row`` keys)."""
    return {**key(MIRRORS, row["id"]), **{name: encode(value) for name, value in row.items()}}


def to_mirror(item: Item) -> Mirror:
    created_at = decode_time(item["created_at"])
    updated_at = decode_time(item["updated_at"])
    assert created_at is not None and updated_at is not None
    return Mirror(
        id=item["id"]["S"],
        organization_id=item["organization_id"]["S"],
        source_region=item["source_region"]["S"],
        source_repository=item["source_repository"]["S"],
        name=item["name"]["S"],
        destination_region=item["destination_region"]["S"],
        storage_namespace=item["storage_namespace"]["S"],
        storage_id=item["storage_id"]["S"],
        state=MirrorState(item["state"]["S"]),
        message=item["message"]["S"],
        created_at=created_at,
        updated_at=updated_at,
        generation=int(item["generation"]["N"]),
    )


def to_branch(item: Item) -> MirrorBranch:
    updated_at = decode_time(item["updated_at"])
    assert updated_at is not None
    return MirrorBranch(
        mirror_id=item["mirror_id"]["S"],
        branch=item["sk"]["S"],
        source_commit_id=_text(item, "source_commit_id"),
        source_commit_time=decode_time(item.get("source_commit_time")),
        mirrored_commit_id=_text(item, "mirrored_commit_id"),
        promoted_at=decode_time(item.get("promoted_at")),
        lag_seconds=_number(item, "lag_seconds"),
        updated_at=updated_at,
        blocked_commit_id=_text(item, "blocked_commit_id"),
        blocked_reason=_text(item, "blocked_reason"),
        retry_after=decode_time(item.get("retry_after")),
        blocked_attempts=int(_number(item, "blocked_attempts") or 0),
    )
