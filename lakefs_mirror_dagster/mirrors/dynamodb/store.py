"""``DynamoMirrorStore``: the mirrors database in one DynamoDB table, put together from one part per kind of item."""

from __future__ import annotations

from .branches import DynamoBranchRecords
from .gc_marks import DynamoGcMarks
from .in_flight import DynamoInFlightRecords
from .organizations import DynamoOrganizationRecords
from .records import DynamoMirrorRecords
from .validated import DynamoValidatedRanges
from .wakeups import DynamoWakeupQueue

__all__ = ["DynamoMirrorStore"]


class DynamoMirrorStore(
    DynamoMirrorRecords,
    DynamoBranchRecords,
    DynamoValidatedRanges,
    DynamoOrganizationRecords,
    DynamoGcMarks,
    DynamoInFlightRecords,
    DynamoWakeupQueue,
):
    """The same operations and guarantees as ``MirrorStore``, on a DynamoDB table (created when missing).

    Built from ``mirrors_database.dynamodb`` (``DynamoDBSettings``): table name, region, endpoint and
    credentials. Every write is decided by DynamoDB: conditional writes and transactions, never a read in
    Python followed by a blind write.
    """
