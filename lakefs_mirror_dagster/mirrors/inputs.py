"""What every mirrors database checks before it writes, and the answers it builds, whatever stores the rows.

The SQL store and the DynamoDB store differ only in how the database decides a write; the rules for names,
namespaces, states, branch fields and range IDs, the truncation of messages, the transition table and the
wording of a refused create live here once.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from .errors import InvalidMirrorSpec, InvalidStateTransition, MirrorExists, NamespaceInUse
from .models import (
    ALLOWED_TRANSITIONS,
    MIRROR_ID,
    PLAIN_ID,
    REPOSITORY_NAME,
    STORAGE_NAMESPACE,
    Mirror,
    MirrorPage,
    MirrorState,
    new_mirror_id,
)
from .races import conflict

__all__ = [
    "BRANCH_UNBLOCKED",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "block_fields",
    "branch_changes",
    "check",
    "check_branch",
    "check_expected_generation",
    "check_gc_time",
    "check_namespace",
    "check_page_size",
    "check_range_ids",
    "check_transition",
    "chunks",
    "fingerprint_ids",
    "gc_addresses",
    "id_taken",
    "message_text",
    "mirror_row",
    "name_taken",
    "namespace_taken",
    "page_of",
    "state_values",
    "utc_now",
    "with_state",
]

DEFAULT_PAGE_SIZE = 1000  # the reference's list_mirrors_page_size default
MAX_PAGE_SIZE = 10_000
_MAX_TEXT = 4096
_STORAGE_ID = re.compile(r"^[A-Za-z0-9._-]{0,128}$")
_MAX_ADDRESS = 1024
_T = TypeVar("_T")
#: The retry schedule's fields once a branch synced (``record_branch(unblock=True)``).
BRANCH_UNBLOCKED: dict[str, Any] = {
    "blocked_commit_id": None,
    "blocked_reason": None,
    "retry_after": None,
    "blocked_attempts": 0,
}


def utc_now() -> datetime:
    """The timestamp written to ``created_at``/``updated_at``."""
    return datetime.now(UTC)


def check(pattern: re.Pattern[str], field: str, value: object, expected: str = "") -> None:
    """``InvalidMirrorSpec`` naming ``field`` unless ``value`` is a string matching ``pattern``."""
    if not isinstance(value, str) or not pattern.match(value):
        hint = f" (expected {expected})" if expected else f" (must match {pattern.pattern})"
        raise InvalidMirrorSpec(f"invalid {field} {value!r}{hint}")


def message_text(message: object) -> str:
    """A state message as stored: a string, cut to 4096 characters (a long error must not fail the write)."""
    if not isinstance(message, str):
        raise InvalidMirrorSpec(f"message must be a string, got {type(message).__name__}")
    return message if len(message) <= _MAX_TEXT else message[: _MAX_TEXT - 3] + "..."


# ---------------------------------------------------------------------------------------------------- mirrors
def mirror_row(
    *,
    organization_id: str,
    source_region: str,
    source_repository: str,
    name: str,
    destination_region: str,
    storage_namespace: str,
    storage_id: str,
    mirror_id: str | None,
    state: MirrorState | str,
    message: str,
) -> dict[str, Any]:
    """The checked fields of a new mirror (generation 1), keyed like ``Mirror``'s fields."""
    check(PLAIN_ID, "organization_id", organization_id)
    check(PLAIN_ID, "source_region", source_region)
    check(PLAIN_ID, "destination_region", destination_region)
    check(REPOSITORY_NAME, "source_repository", source_repository, "a lakeFS repository name")
    check(REPOSITORY_NAME, "name", name, "a lakeFS repository name: ^[a-z0-9][a-z0-9-]{2,62}$")
    check(STORAGE_NAMESPACE, "storage_namespace", storage_namespace, "<scheme>://... (s3, gs, https, local...)")
    if len(storage_namespace) > 1024:
        raise InvalidMirrorSpec("storage_namespace is longer than 1024 characters")
    check(_STORAGE_ID, "storage_id", storage_id)
    mirror_id = new_mirror_id() if mirror_id is None else mirror_id
    check(MIRROR_ID, "mirror_id", mirror_id)
    now = utc_now()
    return {
        "id": mirror_id,
        "organization_id": organization_id,
        "source_region": source_region,
        "source_repository": source_repository,
        "name": name,
        "destination_region": destination_region,
        "storage_namespace": storage_namespace,
        "storage_id": storage_id,
        "state": MirrorState.parse(state).value,
        "message": message_text(message),
        "created_at": now,
        "updated_at": now,
        "generation": 1,
    }


def check_page_size(page_size: object) -> None:
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidMirrorSpec(f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}, got {page_size!r}")


def state_values(states: Collection[MirrorState | str] | None) -> list[str] | None:
    """The ``states`` filter of ``list_mirrors`` as stored values (None: any state)."""
    if states is None:
        return None
    if isinstance(states, str):
        raise InvalidMirrorSpec("states must be a collection of states, not a single string")
    return [MirrorState.parse(s).value for s in states]


def page_of(found: Sequence[Mirror], page_size: int) -> MirrorPage:
    """A page from up to ``page_size + 1`` mirrors in id order: one more than the page means there is a next."""
    if len(found) > page_size:
        return MirrorPage(list(found[:page_size]), found[page_size - 1].id)
    return MirrorPage(list(found), None)


def check_expected_generation(expected_generation: object) -> None:
    if expected_generation is not None and (
        isinstance(expected_generation, bool) or not isinstance(expected_generation, int)
    ):
        raise InvalidMirrorSpec(f"expected_generation must be an int or None, got {expected_generation!r}")


def check_transition(current: Mirror, new_state: MirrorState, expected_generation: int | None) -> None:
    """``ConcurrentUpdate`` when ``current`` is not at the expected generation, ``InvalidStateTransition``
    when ``new_state`` cannot follow its state (staying in the same state is always allowed)."""
    if expected_generation is not None and current.generation != expected_generation:
        raise conflict(current.id, expected_generation, current.generation)
    if new_state != current.state and new_state not in ALLOWED_TRANSITIONS[current.state]:
        raise InvalidStateTransition(
            f"mirror {current.id!r} is {current.state.value}; it cannot become {new_state.value}"
        )


def with_state(mirror: Mirror, *, state: MirrorState, message: str, updated_at: datetime) -> Mirror:
    """``mirror`` after a state change: the next generation."""
    return dataclasses.replace(
        mirror, state=state, message=message, updated_at=updated_at, generation=mirror.generation + 1
    )


def name_taken(row: Mapping[str, Any], other: Mirror | None) -> MirrorExists:
    region = row["destination_region"]
    detail = f" (id {other.id}, state {other.state.value}, source {other.source_repository})" if other else ""
    return MirrorExists(
        f"a mirror named {row['name']!r} already exists in region {region!r}{detail}",
        existing_id=other.id if other else None,
    )


def namespace_taken(row: Mapping[str, Any], other: Mirror | None) -> NamespaceInUse:
    detail = f" by mirror {other.name!r} (id {other.id}, state {other.state.value})" if other else ""
    store = f" of storage {row['storage_id']!r}" if row["storage_id"] else ""
    return NamespaceInUse(
        f"storage namespace {row['storage_namespace']!r}{store} in region {row['destination_region']!r} "
        f"is already used{detail}",
        existing_id=other.id if other else None,
    )


def id_taken(row: Mapping[str, Any]) -> MirrorExists:
    return MirrorExists(f"a mirror with id {row['id']!r} already exists", existing_id=row["id"])


# --------------------------------------------------------------------------------------------------- branches
def check_branch(branch: object) -> None:
    if not isinstance(branch, str) or not 0 < len(branch) <= 255 or branch.strip() != branch:
        raise InvalidMirrorSpec(f"invalid branch name {branch!r}")


def branch_changes(
    branch: str,
    *,
    source_commit_id: str | None,
    source_commit_time: datetime | None,
    mirrored_commit_id: str | None,
    promoted_at: datetime | None,
    lag_seconds: float | None,
    unblock: bool,
) -> dict[str, Any]:
    """The checked fields ``record_branch`` writes: those given, ``updated_at``, and with ``unblock`` the
    retry schedule cleared; fields left as None keep their stored value."""
    check_branch(branch)
    for field_name, value in (("source_commit_id", source_commit_id), ("mirrored_commit_id", mirrored_commit_id)):
        if value is not None and (not isinstance(value, str) or not 0 < len(value) <= 128):
            raise InvalidMirrorSpec(f"{field_name} must be a non-empty string of at most 128 characters")
    for field_name, when in (("source_commit_time", source_commit_time), ("promoted_at", promoted_at)):
        if when is not None and (not isinstance(when, datetime) or when.tzinfo is None):
            raise InvalidMirrorSpec(f"{field_name} must be a timezone-aware datetime, got {when!r}")
    if lag_seconds is not None and (isinstance(lag_seconds, bool) or not isinstance(lag_seconds, int | float)):
        raise InvalidMirrorSpec(f"lag_seconds must be a number, got {lag_seconds!r}")
    given = {
        "source_commit_id": source_commit_id,
        "source_commit_time": source_commit_time,
        "mirrored_commit_id": mirrored_commit_id,
        "promoted_at": promoted_at,
        "lag_seconds": None if lag_seconds is None else float(lag_seconds),
    }
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    changes["updated_at"] = utc_now()
    if unblock:
        changes.update(BRANCH_UNBLOCKED)
    return changes


def block_fields(branch: str, *, commit_id: str, reason: str, retry_after: datetime) -> dict[str, Any]:
    """The checked fields ``block_branch`` writes besides ``blocked_attempts``."""
    check_branch(branch)
    if not isinstance(commit_id, str) or not 0 < len(commit_id) <= 128:
        raise InvalidMirrorSpec("commit_id must be a non-empty string of at most 128 characters")
    if not isinstance(reason, str) or not 0 < len(reason) <= 16:
        raise InvalidMirrorSpec(f"invalid block reason {reason!r}")
    if not isinstance(retry_after, datetime) or retry_after.tzinfo is None:
        raise InvalidMirrorSpec(f"retry_after must be a timezone-aware datetime, got {retry_after!r}")
    return {"blocked_commit_id": commit_id, "blocked_reason": reason, "retry_after": retry_after}


# ------------------------------------------------------------------------------------------- validated ranges
def check_namespace(namespace: object) -> None:
    if not isinstance(namespace, str) or not 0 < len(namespace) <= 1400:
        raise InvalidMirrorSpec(f"invalid validated-ranges namespace {namespace!r} (1 to 1400 characters)")


def check_range_ids(range_ids: Iterable[str]) -> list[str]:
    """The distinct range IDs, sorted (writers that take row locks in one order cannot deadlock)."""
    if isinstance(range_ids, str | bytes):
        raise InvalidMirrorSpec("range_ids must be a collection of range IDs, not a single string")
    ids = set()
    for rid in range_ids:
        if not isinstance(rid, str) or not 0 < len(rid) <= 128 or not rid.isprintable() or " " in rid:
            raise InvalidMirrorSpec(f"invalid range id {rid!r}")
        ids.add(rid)
    return sorted(ids)


def fingerprint_ids(fingerprints: object) -> list[str]:
    """The checked, sorted range IDs of a ``mark_ranges_validated`` mapping (ID -> fingerprint)."""
    if not isinstance(fingerprints, Mapping):
        raise InvalidMirrorSpec("fingerprints must map range IDs to the fingerprints of their files")
    ids = check_range_ids(fingerprints)
    for rid in ids:
        fingerprint = fingerprints[rid]
        if not isinstance(fingerprint, str) or len(fingerprint) > 512:
            raise InvalidMirrorSpec(f"invalid fingerprint {fingerprint!r} of range {rid}")
    return ids


# ------------------------------------------------------------------------------------ garbage-collection marks
def check_gc_time(when: object) -> None:
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise InvalidMirrorSpec(f"a garbage-collection time must be a timezone-aware datetime, got {when!r}")


def gc_addresses(addresses: Iterable[str]) -> list[str]:
    """The distinct relative addresses, in the order given, each checked."""
    if isinstance(addresses, str | bytes):
        raise InvalidMirrorSpec("addresses must be a collection of relative addresses, not a single string")
    checked = []
    for address in dict.fromkeys(addresses):
        if not isinstance(address, str) or not 0 < len(address) <= _MAX_ADDRESS:
            raise InvalidMirrorSpec(f"invalid relative address {address!r} (1 to {_MAX_ADDRESS} characters)")
        checked.append(address)
    return checked


def chunks(items: Sequence[_T], size: int) -> Iterator[list[_T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
