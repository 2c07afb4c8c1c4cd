"""Bring a mirrors database up to the tables of ``schema``, whichever version created it.

Several processes may start at once, so the DDL runs in one transaction under a lock: a PostgreSQL
advisory lock (concurrent ``CREATE TABLE`` would otherwise race on the catalog), or on SQLite the
``BEGIN IMMEDIATE`` the store starts every write with.
"""

from __future__ import annotations

import zlib

from sqlalchemy import Connection, inspect, text

from .schema import metadata, mirror_branches, validated_ranges

__all__ = ["upgrade_schema"]

_DDL_LOCK_KEY = zlib.crc32(b"lakefs_mirror_dagster.mirrors.schema")


def upgrade_schema(conn: Connection, *, dialect: str) -> None:
    """Create missing tables and columns; run inside a write transaction."""
    if dialect == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DDL_LOCK_KEY})
    metadata.create_all(conn)
    _add_missing_columns(conn)


def _add_missing_columns(conn: Connection) -> None:
    """Columns added after a table first shipped: ``create_all`` only creates missing tables, so a
    database made by an older version gets them here (under the same DDL lock)."""
    columns = {c["name"] for c in inspect(conn).get_columns(validated_ranges.name)}
    if "fingerprint" not in columns:
        conn.execute(text("ALTER TABLE validated_ranges ADD COLUMN fingerprint VARCHAR(512) NOT NULL DEFAULT ''"))
    branch_columns = {c["name"] for c in inspect(conn).get_columns(mirror_branches.name)}
    for name in _BRANCH_RETRY_COLUMNS:
        if name not in branch_columns:
            column = mirror_branches.c[name]
            ddl = column.type.compile(dialect=conn.dialect)
            rest = "" if column.nullable else f" NOT NULL DEFAULT {column.server_default.arg}"  # type: ignore[union-attr]
            conn.execute(text(f"ALTER TABLE mirror_branches ADD COLUMN {name} {ddl}{rest}"))


#: The retry schedule's columns of ``mirror_branches`` (added after the table first shipped).
_BRANCH_RETRY_COLUMNS = ("blocked_commit_id", "blocked_reason", "retry_after", "blocked_attempts")
