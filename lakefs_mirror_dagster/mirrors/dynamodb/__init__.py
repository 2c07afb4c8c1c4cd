"""The mirrors database on DynamoDB (``mirrors_database.type: dynamodb``), the reference's usual shared database.

``DynamoMirrorStore`` gives the guarantees ``MirrorStore`` gives on SQL: names and namespaces unique per
region, compare-and-set state changes, one organisation fingerprint, the same pages and the same errors.
Conditional writes and transactions are atomic within one DynamoDB region; a global table replicates them
to other regions, where a concurrent conflicting write is resolved by last writer wins.
boto3 is imported only when a store is built.
"""

from .store import DynamoMirrorStore

__all__ = ["DynamoMirrorStore"]
