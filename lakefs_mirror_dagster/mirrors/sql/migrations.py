"""Bring a mirrors database up to the tables of ``schema``, whichever version created it.

Several processes may start at once, so the DDL runs in one transaction under a lock: a PostgreSQL
advisory lock (concurrent ``CREATE TABLE`` would otherwise race on the catalog), or on SQLite the
``BEGIN IMMEDIATE`` the store starts every write with. Every process opens the database (a Dagster run, a
sensor tick), so ``schema_is_current`` first looks without a lock: only a database that lacks something
takes it (on SQLite, waiting for every writer of the moment).
"""

from __future__ import annotations

import zlib

from sqlalchemy import Connection, inspect, text

from .schema import metadata, mirror_branches, validated_ranges

__all__ = ["schema_is_current", "upgrade_schema"]

_DDL_LOCK_KEY = zlib.crc32(b"lakefs_mirror_dagster.mirrors.schema")


def upgrade_schema(conn: Connection, *, dialect: str) -> None:
    """Create missing tables and columns; run inside a write transaction."""
    if dialect == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DDL_LOCK_KEY})
    metadata.create_all(conn)
    _add_missing_columns(conn)


def schema_is_current(conn: Connection) -> bool:
    """Whether every table and column ``upgrade_schema`` would create exists (read only)."""
    present = set(inspect(conn).get_table_names())
    return set(metadata.tables) <= present and not _missing_columns(conn)


def _missing_columns(conn: Connection) -> list[tuple[str, str]]:
    """(table, column) added after the table first shipped and absent here."""
    missing = []
    for table, names in ((validated_ranges.name, ("fingerprint",)), (mirror_branches.name, _BRANCH_RETRY_COLUMNS)):
        columns = {c["name"] for c in inspect(conn).get_columns(table)}
        missing += [(table, name) for name in names if name not in columns]
    return missing


def _add_missing_columns(conn: Connection) -> None:
    """Columns added after a table first shipped: ``create_all`` only creates missing tables, so a
    database made by an older version gets them here (under the same DDL lock)."""
    for table, name in _missing_columns(conn):
        if table == validated_ranges.name:
            conn.execute(text("ALTER TABLE validated_ranges ADD COLUMN fingerprint VARCHAR(512) NOT NULL DEFAULT ''"))
            continue
        column = mirror_branches.c[name]
        ddl = column.type.compile(dialect=conn.dialect)
        rest = "" if column.nullable else f" NOT NULL DEFAULT {column.server_default.arg}"  # type: ignore[union-attr]
        conn.execute(text(f"ALTER TABLE mirror_branches ADD COLUMN {name} {ddl}{rest}"))


#: The retry schedule's columns of ``mirror_branches`` (added after the table first shipped).
_BRANCH_RETRY_COLUMNS = ("blocked_commit_id", "blocked_reason", "retry_after", "blocked_attempts")
