"""The mirrors database as its users see it, whichever database keeps it, and the one place that picks it.

``MirrorsDatabase`` is what the service, the Dagster code location and the engine call; ``MirrorStore``
(SQLite, PostgreSQL) and ``DynamoMirrorStore`` (DynamoDB) implement it with the same guarantees.
``open_mirrors_database`` chooses between them from ``mirrors_database.type``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

from .in_flight_model import RefInFlight
from .models import Mirror, MirrorBranch, MirrorPage, MirrorState
from .organizations import Organization
from .wakeups import MAX_WAKEUPS, RefWakeup

if TYPE_CHECKING:
    from ..config import MirrorsDatabaseConfig

__all__ = ["MirrorsDatabase", "open_mirrors_database"]


class MirrorsDatabase(Protocol):
    """Mirror records, branch states, the validated-ranges cache, garbage-collection marks, the
    organisations and the refs in flight; every write is decided by the database (see ``sql/`` and
    ``dynamodb/``)."""

    @property
    def url(self) -> str:
        """Where the database is, safe to log (no password)."""
        ...

    def create_tables(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

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
    ) -> Mirror: ...

    def get_mirror(self, mirror_id: str) -> Mirror: ...

    def get_by_name(self, region: str, name: str) -> Mirror: ...

    def list_mirrors(
        self,
        *,
        source_repository: str | None = None,
        destination_region: str | None = None,
        states: Collection[MirrorState | str] | None = None,
        organization_id: str | None = None,
        source_region: str | None = None,
        page_size: int = ...,
        after: str | None = None,
    ) -> MirrorPage: ...

    def iter_mirrors(self, *, page_size: int = ..., **filters: Any) -> Iterator[Mirror]: ...

    def set_state(
        self, mirror_id: str, state: MirrorState | str, message: str, expected_generation: int | None
    ) -> Mirror: ...

    def delete_mirror(self, mirror_id: str, *, expected_generation: int | None = None) -> bool: ...

    def record_branch(
        self,
        mirror_id: str,
        branch: str,
        *,
        source_commit_id: str | None = None,
        source_commit_time: datetime | None = None,
        mirrored_commit_id: str | None = None,
        promoted_at: datetime | None = None,
        lag_seconds: float | None = None,
        unblock: bool = False,
    ) -> MirrorBranch: ...

    def block_branch(
        self, mirror_id: str, branch: str, *, commit_id: str, reason: str, retry_after: datetime
    ) -> MirrorBranch: ...

    def get_branches(self, mirror_id: str) -> list[MirrorBranch]: ...

    def get_branch(self, mirror_id: str, branch: str) -> MirrorBranch | None: ...

    def delete_branch(self, mirror_id: str, branch: str) -> bool: ...

    def mark_ranges_validated(self, namespace: str, fingerprints: Mapping[str, str]) -> int: ...

    def validated_ranges(self, namespace: str, range_ids: Iterable[str]) -> dict[str, str]: ...

    def forget_validated(self, namespace: str, range_ids: Iterable[str] | None = None) -> int: ...

    def validated_count(self, namespace: str) -> int: ...

    def note_missing(self, mirror_id: str, addresses: Iterable[str], now: datetime) -> dict[str, datetime]: ...

    def missing_since(self, mirror_id: str, addresses: Iterable[str]) -> dict[str, datetime]: ...

    def forget_missing(self, mirror_id: str, addresses: Iterable[str]) -> int: ...

    def sweep_missing(self, mirror_id: str, not_seen_since: datetime) -> int: ...

    def missing_count(self, mirror_id: str) -> int: ...

    def claim_organization(self, organization_id: str, fingerprint: str, region: str) -> Organization: ...

    def organization_ids(self) -> list[str]: ...

    # ------------------------------------------------------------------ refs in flight (in_flight_model.py)
    def put_in_flight(self, record: RefInFlight) -> None: ...

    def clear_in_flight(self, mirror_id: str, kind: str, ref: str) -> bool: ...

    def refs_in_flight(self, mirror_id: str) -> list[RefInFlight]: ...

    # -- lakeFS hooks' wake-up queue (wakeups.py)
    def queue_wakeup(
        self, mirror_id: str, destination_region: str, kind: str, ref: str, event: str, now: datetime
    ) -> RefWakeup: ...

    def wakeups(self, destination_region: str, *, limit: int = MAX_WAKEUPS) -> list[RefWakeup]: ...

    def ack_wakeups(self, handled: Iterable[RefWakeup]) -> int: ...

    def claim_wakeups(self, wakeups: Iterable[RefWakeup], now: datetime) -> list[RefWakeup]:
        """Claim each wake-up unless its token changed since it was read (queued again, or another tick claimed
        it first); the ones claimed, with their claim token (ack those)."""
        ...

    def request_run(
        self, mirror_id: str, kind: str, ref: str, run_key: str, requester: str, now: datetime, *, lost_before: datetime
    ) -> bool:
        """Record that ``requester`` requests ``run_key`` for the ref; False (nothing written) when another
        requester recorded that same key since ``lost_before``. A different key, or one recorded by the same
        requester (Dagster deduplicates a sensor's own keys), or before ``lost_before``, is overwritten."""
        ...


def open_mirrors_database(config: MirrorsDatabaseConfig, *, create_tables: bool = True) -> MirrorsDatabase:
    """The store ``config`` names (``mirrors_database``); its tables are created when missing unless
    ``create_tables`` is False. boto3 and the DynamoDB store are imported only for ``type: dynamodb``."""
    if config.type == "dynamodb":
        from .dynamodb import DynamoMirrorStore

        return DynamoMirrorStore(config.dynamodb, create_tables=create_tables)
    from .sql.store import MirrorStore

    return MirrorStore(config.sqlalchemy_url, create_tables=create_tables)
