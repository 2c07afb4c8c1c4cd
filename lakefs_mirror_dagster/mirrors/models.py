"""Plain values the mirrors database hands out: no ORM objects, so callers never hold a session."""

from __future__ import annotations

import enum
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import InvalidMirrorSpec

__all__ = [
    "ALLOWED_TRANSITIONS",
    "Mirror",
    "MirrorBranch",
    "MirrorPage",
    "MirrorState",
    "new_mirror_id",
    "validation_namespace",
]

# Same rule lakeFS applies to repository names (api/swagger.yml RepositoryCreation.name).
REPOSITORY_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
# Same schemes lakeFS accepts for a storage namespace.
STORAGE_NAMESPACE = re.compile(r"^(s3|gs|https?|mem|local|transient)://.+$")
# Region and organization ids end up in URLs, config keys and validation keys: keep them plain.
PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
MIRROR_ID = re.compile(r"^[a-z0-9][a-z0-9-]{2,63}$")
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


class MirrorState(enum.StrEnum):
    """Lifecycle of a mirror, driven by the mirrors manager.

    ``pending`` (recorded, nothing done) -> ``creating`` (making the read-only repository) -> ``active``
    (commits are mirrored); ``deleting`` -> ``deleted`` when removed; ``failed`` when a step gave up.
    """

    PENDING = "pending"
    CREATING = "creating"
    ACTIVE = "active"
    DELETING = "deleting"
    DELETED = "deleted"
    FAILED = "failed"

    @classmethod
    def parse(cls, value: MirrorState | str) -> MirrorState:
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(s.value for s in cls)
            raise InvalidMirrorSpec(f"invalid mirror state {value!r}; expected one of: {allowed}") from None


# Which state may follow which. Staying in the same state is always allowed (a new message).
ALLOWED_TRANSITIONS: dict[MirrorState, frozenset[MirrorState]] = {
    MirrorState.PENDING: frozenset(
        {MirrorState.CREATING, MirrorState.ACTIVE, MirrorState.FAILED, MirrorState.DELETING}
    ),
    MirrorState.CREATING: frozenset(
        {MirrorState.PENDING, MirrorState.ACTIVE, MirrorState.FAILED, MirrorState.DELETING}
    ),
    MirrorState.ACTIVE: frozenset({MirrorState.FAILED, MirrorState.DELETING}),
    MirrorState.FAILED: frozenset(
        {MirrorState.PENDING, MirrorState.CREATING, MirrorState.ACTIVE, MirrorState.DELETING}
    ),
    MirrorState.DELETING: frozenset({MirrorState.DELETED, MirrorState.FAILED}),
    MirrorState.DELETED: frozenset(),
}


_last_id_value = 0
_id_lock = threading.Lock()


def new_mirror_id() -> str:
    """26 lowercase base32 characters: 48 bits of milliseconds then 80 random bits.

    Sorting ids sorts mirrors by creation time (stable pagination), and the id is itself a valid lakeFS
    repository name, so it can name the mirror repository or appear in an ARN as the reference's
    ``{mirrorId}`` does. Ids made by one process within the same millisecond (or after the clock stepped back)
    follow the previous one (its value plus one), so they sort in the order they were made there too.
    """
    global _last_id_value
    value = (int(time.time() * 1000) & ((1 << 48) - 1)) << 80 | secrets.randbits(80)
    with _id_lock:
        if value >> 80 <= _last_id_value >> 80:
            value = _last_id_value + 1
        _last_id_value = value
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def validation_namespace(destination_region: str, storage_id: str, storage_namespace: str) -> str:
    """Key of the validated-ranges cache for one destination namespace.

    A namespace URI alone is not unique across regions (two MinIOs may both have ``s3://data/x``, and a
    ``local://`` namespace is relative to each lakeFS's root), so the key also names region and store.
    """
    return f"{destination_region}/{storage_id}/{storage_namespace}"


@dataclass(frozen=True)
class Mirror:
    """One mirror definition: source repository -> read-only repository ``name`` in another region."""

    id: str
    organization_id: str
    source_region: str
    source_repository: str
    name: str
    destination_region: str
    storage_namespace: str
    storage_id: str
    state: MirrorState
    message: str
    created_at: datetime
    updated_at: datetime
    generation: int

    @property
    def validation_namespace(self) -> str:
        """The key to pass to the validated-ranges methods for this mirror's destination."""
        return validation_namespace(self.destination_region, self.storage_id, self.storage_namespace)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (ISO 8601 times) for the REST API and the CLI."""
        return {
            "id": self.id,
            "organization_id": self.organization_id,
            "source_region": self.source_region,
            "source_repository": self.source_repository,
            "name": self.name,
            "region": self.destination_region,
            "storage_namespace": self.storage_namespace,
            "storage_id": self.storage_id,
            "state": self.state.value,
            "message": self.message,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "generation": self.generation,
        }


@dataclass(frozen=True)
class MirrorBranch:
    """What we know about one mirrored branch: the source head seen and the commit the mirror shows."""

    mirror_id: str
    branch: str
    source_commit_id: str | None
    source_commit_time: datetime | None
    mirrored_commit_id: str | None
    promoted_at: datetime | None
    lag_seconds: float | None
    updated_at: datetime
    #: Set while the branch's sync is blocked at ``blocked_commit_id`` (its source head then): why
    #: (``missing`` or ``error``), the earliest time it may be tried again, and how many tries were blocked.
    blocked_commit_id: str | None = None
    blocked_reason: str | None = None
    retry_after: datetime | None = None
    blocked_attempts: int = 0

    @property
    def in_sync(self) -> bool:
        """True when the mirror shows the source head we last saw."""
        return self.source_commit_id is not None and self.source_commit_id == self.mirrored_commit_id

    def behind_seconds(self, now: datetime) -> float | None:
        """How long the mirror has been missing the source head: 0 in sync, else the age of the source commit it
        has not mirrored (None when that commit's time is not known yet)."""
        if self.in_sync:
            return 0.0
        if self.source_commit_time is None:
            return None
        return max(0.0, (now - self.source_commit_time).total_seconds())

    def as_dict(self) -> dict[str, Any]:
        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value else None

        return {
            "mirror_id": self.mirror_id,
            "branch": self.branch,
            "source_commit_id": self.source_commit_id,
            "source_commit_time": iso(self.source_commit_time),
            "mirrored_commit_id": self.mirrored_commit_id,
            "promoted_at": iso(self.promoted_at),
            "lag_seconds": self.lag_seconds,
            "updated_at": self.updated_at.isoformat(),
            "blocked_commit_id": self.blocked_commit_id,
            "blocked_reason": self.blocked_reason,
            "retry_after": iso(self.retry_after),
            "blocked_attempts": self.blocked_attempts,
        }


@dataclass(frozen=True)
class MirrorPage:
    """One page of ``list_mirrors``; pass ``next_after`` as ``after`` for the next, None at the end."""

    mirrors: list[Mirror]
    next_after: str | None
