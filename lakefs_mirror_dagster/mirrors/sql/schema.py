"""Tables of the mirrors database (SQLAlchemy Core), portable between SQLite and PostgreSQL.

Uniqueness that must hold across regions (one mirror name and one storage namespace per destination)
is enforced by the database's own constraints, so two regions racing to create never both win.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator

from ..models import MirrorState

__all__ = [
    "gc_missing",
    "metadata",
    "mirror_branches",
    "mirrors",
    "organizations",
    "refs_in_flight",
    "validated_ranges",
]


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out; SQLite has no time zones, so it stores naive UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the mirrors database needs timezone-aware times")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


metadata = MetaData(
    naming_convention={
        "pk": "pk_%(table_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "ix": "ix_%(table_name)s_%(column_0_name)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
    }
)

_STATES = ", ".join(f"'{s.value}'" for s in MirrorState)

mirrors = Table(
    "mirrors",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("organization_id", String(128), nullable=False),
    Column("source_region", String(128), nullable=False),
    Column("source_repository", String(63), nullable=False),
    Column("name", String(63), nullable=False),
    Column("destination_region", String(128), nullable=False),
    Column("storage_id", String(128), nullable=False, default=""),
    Column("storage_namespace", String(1024), nullable=False),
    Column("state", String(16), nullable=False),
    Column("message", Text, nullable=False, default=""),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # Bumped by every state change; set_state compares it to detect a concurrent writer.
    Column("generation", Integer, nullable=False),
    UniqueConstraint("destination_region", "name", name="uq_mirrors_destination_name"),
    UniqueConstraint("destination_region", "storage_id", "storage_namespace", name="uq_mirrors_destination_namespace"),
    CheckConstraint(f"state IN ({_STATES})", name="state"),
    CheckConstraint("generation >= 1", name="generation"),
)
Index("ix_mirrors_source_repository", mirrors.c.source_repository, mirrors.c.id)

mirror_branches = Table(
    "mirror_branches",
    metadata,
    Column("mirror_id", String(64), ForeignKey("mirrors.id", ondelete="CASCADE"), primary_key=True),
    Column("branch", String(255), primary_key=True),
    Column("source_commit_id", String(128), nullable=True),
    Column("source_commit_time", UTCDateTime, nullable=True),
    Column("mirrored_commit_id", String(128), nullable=True),
    Column("promoted_at", UTCDateTime, nullable=True),
    Column("lag_seconds", Float, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
    # The retry schedule of a branch whose sync was blocked (region/retry.py): the source commit it was
    # blocked at, why ("missing" or "error"), the earliest time it may be tried again and how many blocked
    # tries that commit has had. All NULL (attempts 0) once the branch syncs or its source head moves.
    Column("blocked_commit_id", String(128), nullable=True),
    Column("blocked_reason", String(16), nullable=True),
    Column("retry_after", UTCDateTime, nullable=True),
    Column("blocked_attempts", Integer, nullable=False, server_default="0"),
)

validated_ranges = Table(
    "validated_ranges",
    metadata,
    # validation_namespace(): destination region, storage id and storage namespace URI.
    Column("namespace", String(1400), primary_key=True),
    Column("range_id", String(128), primary_key=True),
    Column("validated_at", UTCDateTime, nullable=False),
    # ObjectStat.fingerprint of the file when it was validated; "" (rows of older versions) is never trusted.
    Column("fingerprint", String(512), nullable=False, server_default=""),
)

organizations = Table(
    "organizations",
    metadata,
    # The organisations whose regions share this database: the first region of each recorded a keyed
    # fingerprint of its auth.encrypt.secret_key (organizations.py), which every later region must match.
    # Never the key itself. A database of an older version gets this table from create_all.
    Column("organization_id", String(128), primary_key=True),
    Column("key_fingerprint", String(64), nullable=False),
    Column("first_region", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

gc_missing = Table(
    "gc_missing",
    metadata,
    # Data objects of a mirror's namespace that its source's namespace no longer has (deleted there by lakeFS
    # garbage collection): when a pass first saw each missing and when one last did (region/gc_deletions.py).
    # An object is deleted at the mirror only once it has been missing for the grace period. A database of an
    # older version gets this table from create_all.
    Column("mirror_id", String(64), ForeignKey("mirrors.id", ondelete="CASCADE"), primary_key=True),
    Column("address", String(1024), primary_key=True),
    Column("first_missing_at", UTCDateTime, nullable=False),
    Column("last_missing_at", UTCDateTime, nullable=False),
)

# ------------------------------------------------------------------------------------------ refs in flight
refs_in_flight = Table(
    "refs_in_flight",
    metadata,
    # The branches and tags an engine is advancing right now, with its progress (in_flight.py): written at the
    # progress cadence, removed when the ref is done; an old updated_at is a process that died (shown stale).
    # A database of an older version gets this table from create_all.
    Column("mirror_id", String(64), ForeignKey("mirrors.id", ondelete="CASCADE"), primary_key=True),
    Column("kind", String(8), primary_key=True),
    Column("ref", String(255), primary_key=True),
    Column("source_commit_id", String(128), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("ranges_planned", BigInteger, nullable=False),
    Column("ranges_done", BigInteger, nullable=False),
    Column("objects_planned", BigInteger, nullable=False),
    Column("objects_done", BigInteger, nullable=False),
    Column("bytes_done", BigInteger, nullable=False),
)
