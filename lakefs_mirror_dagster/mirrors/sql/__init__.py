"""The mirrors database on SQLite or PostgreSQL (``mirrors_database.type: sqlite|postgres``), through SQLAlchemy.

``MirrorStore`` gives the guarantees ``DynamoMirrorStore`` gives on DynamoDB: the database's own constraints
and compare-and-set updates decide every race. One module per table, over one transaction runner
(``transactions``); ``migrations`` creates or upgrades the tables of ``schema``.
"""

from .store import MirrorStore

__all__ = ["MirrorStore"]
