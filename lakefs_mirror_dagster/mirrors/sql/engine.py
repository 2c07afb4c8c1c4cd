"""The SQLAlchemy engine behind ``MirrorStore``: which URLs are accepted and how SQLite is set up.

SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` for writes so several processes on one machine
queue instead of failing; PostgreSQL URLs are read as psycopg 3 whatever their spelling.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from ...config.database import with_psycopg
from ...errors import needs_extra
from ..errors import InvalidMirrorSpec, MirrorsDatabaseError

__all__ = ["READ_ONLY", "make_engine"]

#: Execution option marking a read-only transaction: SQLite then begins it deferred, not IMMEDIATE.
READ_ONLY = "mirrors_read_only"


def make_engine(url: str | URL, *, busy_timeout_s: float, echo: bool) -> Engine:
    """An engine for a ``sqlite://`` or PostgreSQL URL; ``InvalidMirrorSpec`` for anything else."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise InvalidMirrorSpec(f"invalid mirrors database URL {url!r}: {exc}") from None
    backend = parsed.get_backend_name()
    if backend in ("postgres", "postgresql"):
        parsed = with_psycopg(parsed)  # the config's one PostgreSQL driver rule
        with needs_extra("postgres", "a PostgreSQL mirrors database"):  # SQLAlchemy imports psycopg here
            return create_engine(parsed, echo=echo, pool_pre_ping=True, pool_size=5, max_overflow=10)
    if backend != "sqlite":
        raise InvalidMirrorSpec(
            f"unsupported mirrors database URL {parsed.render_as_string(hide_password=True)!r}: "
            "use sqlite:///path/to/mirrors.db or postgresql+psycopg://user:pass@host:port/db"
        )
    if sqlite3.sqlite_version_info < (3, 35):
        raise MirrorsDatabaseError(
            f"SQLite {sqlite3.sqlite_version} is too old for the mirrors database (it needs >= 3.35 for RETURNING)"
        )
    database = parsed.database or ""
    in_memory = database in ("", ":memory:") or parsed.query.get("mode") == "memory"
    if in_memory:
        engine = create_engine(parsed, echo=echo, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        if not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, echo=echo, connect_args={"timeout": busy_timeout_s})
    _sqlite_transactions(engine, busy_timeout_ms=int(busy_timeout_s * 1000), wal=not in_memory)
    return engine


def _sqlite_transactions(engine: Engine, *, busy_timeout_ms: int, wal: bool) -> None:
    """Take SQLite's transaction handling away from the driver so writes start with ``BEGIN IMMEDIATE``.

    A deferred transaction that reads and then writes can fail at once with SQLITE_BUSY when another
    process wrote in between (the busy timeout does not help there); taking the write lock up front
    makes writers queue on the busy timeout instead. Reads use a plain deferred ``BEGIN``.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
            if wal:
                cursor.execute("PRAGMA journal_mode = WAL")
                cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        read_only = conn.get_execution_options().get(READ_ONLY, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")
