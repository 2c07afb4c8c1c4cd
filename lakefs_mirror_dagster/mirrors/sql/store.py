"""``MirrorStore``: the mirrors database on SQLite (one machine) or PostgreSQL (regions that share it).

Every write is one short transaction whose outcome the database decides (unique constraints, ``UPDATE ... WHERE
generation = n``), never a read in Python followed by a blind write, so regions writing at once cannot corrupt
it or lose an update. Put together from one part per table over the shared transaction runner; ``migrations``
creates or upgrades the tables, ``inputs`` holds the checks shared with the DynamoDB store.
"""

from __future__ import annotations

import functools

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from .branches import BranchRecords
from .engine import make_engine
from .gc_marks import GcMarks
from .in_flight import InFlightRecords
from .migrations import schema_is_current, upgrade_schema
from .organizations import OrganizationRecords
from .records import MirrorRecords
from .validated import ValidatedRangesCache
from .wakeup_records import WakeupQueue

__all__ = ["MirrorStore"]


class MirrorStore(
    MirrorRecords,
    BranchRecords,
    ValidatedRangesCache,
    OrganizationRecords,
    GcMarks,
    InFlightRecords,
    WakeupQueue,
):
    """Typed access to the mirrors database; tables are created on construction.

    ``url`` is a SQLAlchemy URL (string or ``URL``): ``sqlite:///path/mirrors.db`` (WAL mode, busy
    timeout) for one machine, ``postgresql+psycopg://user:pass@host/db`` when regions share the
    database (``postgres://`` and ``postgresql://`` are read as psycopg 3 too).
    """

    def __init__(
        self,
        url: str | URL,
        *,
        busy_timeout_s: float = 30.0,
        create_tables: bool = True,
        echo: bool = False,
    ) -> None:
        self._engine = make_engine(url, busy_timeout_s=busy_timeout_s, echo=echo)
        self.dialect = self._engine.dialect.name
        if create_tables:
            self.create_tables()

    # ------------------------------------------------------------------ lifecycle
    @property
    def engine(self) -> Engine:
        return self._engine

    def create_tables(self) -> None:
        """Create missing tables; safe when several processes start at once.

        PostgreSQL: under a transaction-scoped advisory lock (concurrent ``CREATE TABLE`` would otherwise
        race on the catalog). SQLite: inside ``BEGIN IMMEDIATE``, which serialises writers anyway. Neither
        when a read finds nothing missing (``schema_is_current``): every run and sensor tick opens the store.
        """
        if not self._run(schema_is_current, write=False):
            self._run(functools.partial(upgrade_schema, dialect=self.dialect))

    def close(self) -> None:
        """Release pooled connections (call before forking, and when done)."""
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"MirrorStore({self.url!r})"
