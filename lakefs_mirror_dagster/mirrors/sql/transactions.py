"""One short transaction per store operation, and what happens when two writers race.

Transactions the database rolled back (busy, serialization failure, deadlock) are retried, since
nothing was committed; a compare-and-set that lost to another writer is settled by ``races``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

from ...backoff import Backoff
from ..common import StoreCommon
from ..errors import MirrorsDatabaseUnavailable
from .engine import READ_ONLY

__all__ = ["STATEMENT_CHUNK", "Transactions", "rowcount"]

T = TypeVar("T")

#: Tries of a transaction the database rolled back (busy, serialization failure, deadlock): lock waits are short.
_ROLLED_BACK = Backoff(base=0.05, cap=1.0, attempts=5)
#: Values per ``IN (...)`` or multi-row ``INSERT``: far below SQLite's bound-parameter limit.
STATEMENT_CHUNK = 500


class Transactions(StoreCommon):
    """The engine and the transaction runner that every part of ``MirrorStore`` builds on."""

    _engine: Engine
    #: "sqlite" or "postgresql".
    dialect: str

    @property
    def url(self) -> str:
        """The database URL with any password masked (safe to log)."""
        return self._engine.url.render_as_string(hide_password=True)

    def _insert(self, table: Any) -> Any:
        """INSERT with the dialect's ON CONFLICT support (both SQLite and PostgreSQL have it)."""
        if self.dialect == "postgresql":
            return pg_dialect.insert(table)
        return sqlite_dialect.insert(table)

    def _run(self, op: Callable[[Connection], T], *, write: bool = True) -> T:
        """Run ``op`` in one transaction, retrying only errors after which nothing was committed."""
        tries = _ROLLED_BACK.start()
        while True:
            try:
                with self._engine.connect() as conn:
                    if not write:
                        conn = conn.execution_options(**{READ_ONLY: True})
                    with conn.begin():
                        return op(conn)
            except DBAPIError as exc:
                if isinstance(exc, IntegrityError):
                    raise
                if not _transient(exc):
                    if isinstance(exc, OperationalError | InterfaceError):  # down, refused, wrong password, ...
                        raise MirrorsDatabaseUnavailable(f"mirrors database {self.url} failed: {exc.orig}") from exc
                    raise
                if not tries.wait():
                    raise MirrorsDatabaseUnavailable(
                        f"mirrors database {self.url} stayed busy after {tries.attempts} attempts: {exc.orig}"
                    ) from exc


def _transient(exc: DBAPIError) -> bool:
    """Errors after which the transaction was rolled back and an identical retry can succeed."""
    if exc.connection_invalidated:
        return False  # the commit may or may not have happened; let the caller decide
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate in ("40001", "40P01", "55P03"):  # serialization failure, deadlock, lock not available
        return True
    message = str(exc.orig).lower()
    return "database is locked" in message or "database is busy" in message


def rowcount(conn: Connection, stmt: Any) -> int:
    """Run ``stmt`` (an UPDATE or DELETE) and return how many rows it changed: an op for ``Transactions._run``."""
    return int(conn.execute(stmt).rowcount)
