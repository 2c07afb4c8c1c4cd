"""The DynamoDB table behind ``DynamoMirrorStore``: the client, the table's creation, and what errors mean.

Every write that must be decided by the database is a conditional write or a transaction; when a condition
fails the caller gets ``ConditionFailed`` or ``Cancelled`` (with which items failed and what they held) and
decides what that means. Everything else DynamoDB or the network answers becomes ``MirrorsDatabaseError``.
Transactions that lost only to another transaction (``TransactionConflict``) wrote nothing and are retried.
A failure of the database itself (table missing, access refused, throttled or unreachable past the retries)
is ``MirrorsDatabaseUnavailable``, as on SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ...backoff import Backoff
from ..common import StoreCommon
from ..errors import MirrorsDatabaseError, MirrorsDatabaseUnavailable
from .items import KEY_ATTRIBUTES, Item

if TYPE_CHECKING:
    from ...config import DynamoDBSettings

__all__ = ["Cancelled", "ConditionFailed", "DynamoTable", "make_client"]

#: Tries of a transaction that lost only to another transaction (it wrote nothing): they settle in milliseconds.
_CONFLICT = Backoff(base=0.02, cap=1.0, attempts=8)
#: Polls for a table being created (by this process or another) to become ACTIVE.
_TABLE_ACTIVE_TIMEOUT_S = 120.0
_TABLE_ACTIVE = Backoff(base=0.1, cap=2.0, deadline=_TABLE_ACTIVE_TIMEOUT_S)
#: Tries of a BatchGetItem whose keys came back unprocessed (throttled): DynamoDB asks for a real backoff here.
_THROTTLED_READS = Backoff(base=0.05, cap=10.0, attempts=10)
#: Answers about one request (an item too large, a bad expression), not about the database.
_REQUEST_ERRORS = frozenset(
    {"ValidationException", "ItemCollectionSizeLimitExceededException", "TransactionCanceledException"}
)
#: Items per TransactWriteItems and per BatchGetItem (DynamoDB's limits).
TRANSACT_MAX = 100


class ConditionFailed(Exception):
    """Internal: a conditional write's condition was false; ``item`` is what the item held (if returned)."""

    def __init__(self, item: Item | None) -> None:
        super().__init__("condition failed")
        self.item = item


class Cancelled(Exception):
    """Internal: a transaction was cancelled because conditions failed: ``failed`` maps the index of each
    failed action to what its item held (None when the item did not exist or was not returned)."""

    def __init__(self, failed: dict[int, Item | None]) -> None:
        super().__init__(f"transaction cancelled: conditions of actions {sorted(failed)} failed")
        self.failed = failed


class _DynamoError(MirrorsDatabaseUnavailable):
    """DynamoDB failed as a database (table missing, access refused, throttled or unreachable past the retries);
    ``code`` is DynamoDB's error code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class DynamoTable(StoreCommon):
    """The client and table every part of ``DynamoMirrorStore`` builds on."""

    def __init__(self, settings: DynamoDBSettings, *, create_tables: bool = True) -> None:
        self._table = settings.table_name
        self._client, region = make_client(settings)
        where = settings.endpoint or region
        self._url = f"dynamodb://{self._table}@{where}"
        if create_tables:
            try:
                self.create_tables()
            except BaseException:
                self.close()
                raise

    @property
    def url(self) -> str:
        """The table and where it is (region or endpoint), safe to log."""
        return self._url

    def close(self) -> None:
        """Release the client's pooled connections."""
        self._client.close()

    def __repr__(self) -> str:
        return f"DynamoMirrorStore({self.url!r})"

    # ------------------------------------------------------------------ table
    def create_tables(self) -> None:
        """Create the table when missing and wait until it is active; safe when several processes start at
        once (one creates it, the others find it being created). A table with another key schema is refused.

        The table has streams with new and old images, which a DynamoDB global table needs for its replicas.
        """
        try:
            table = self._call("describe_table", TableName=self._table)["Table"]
        except _DynamoError as missing:
            if missing.code != "ResourceNotFoundException":
                raise
            try:
                self._call(
                    "create_table",
                    TableName=self._table,
                    AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in KEY_ATTRIBUTES],
                    KeySchema=[
                        {"AttributeName": KEY_ATTRIBUTES[0], "KeyType": "HASH"},
                        {"AttributeName": KEY_ATTRIBUTES[1], "KeyType": "RANGE"},
                    ],
                    BillingMode="PAY_PER_REQUEST",
                    StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
                )
            except _DynamoError as exc:
                if exc.code != "ResourceInUseException":  # another process is creating it: wait for that
                    raise
            table = self._wait_active()
        self._check_key_schema(table)

    def _wait_active(self) -> Mapping[str, Any]:
        tries = _TABLE_ACTIVE.start()
        while True:
            try:
                table: Mapping[str, Any] = self._call("describe_table", TableName=self._table)["Table"]
                if table.get("TableStatus") == "ACTIVE":
                    return table
            except _DynamoError as exc:
                if exc.code != "ResourceNotFoundException":
                    raise  # else: created by another process a moment ago, not visible yet
            if not tries.wait():
                raise MirrorsDatabaseError(
                    f"mirrors database {self.url}: the table was not active within {_TABLE_ACTIVE_TIMEOUT_S:.0f}s"
                )

    def _check_key_schema(self, table: Mapping[str, Any]) -> None:
        keys = {k["AttributeName"]: k["KeyType"] for k in table.get("KeySchema", [])}
        types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])}
        wanted = {KEY_ATTRIBUTES[0]: "HASH", KEY_ATTRIBUTES[1]: "RANGE"}
        if keys != wanted or any(types.get(a) != "S" for a in KEY_ATTRIBUTES):
            raise MirrorsDatabaseError(
                f"mirrors database {self.url}: the table exists with another key schema ({keys}); a mirrors table "
                f"has a string partition key {KEY_ATTRIBUTES[0]!r} and a string sort key {KEY_ATTRIBUTES[1]!r}: "
                "use another table_name"
            )

    # ------------------------------------------------------------------ calls
    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        """One DynamoDB call; a failed condition is ``ConditionFailed``, a conflict with a transaction is
        retried, anything else is ``MirrorsDatabaseError`` naming the table."""
        from botocore.exceptions import BotoCoreError, ClientError

        tries = _CONFLICT.start()
        while True:
            try:
                result: dict[str, Any] = getattr(self._client, operation)(**kwargs)
                return result
            except ClientError as exc:
                error = exc.response.get("Error", {})
                code = error.get("Code", "")
                if code == "ConditionalCheckFailedException":
                    raise ConditionFailed(cast("Item | None", exc.response.get("Item"))) from None
                if code == "TransactionCanceledException":
                    reasons = exc.response.get("CancellationReasons") or []
                    codes = {r.get("Code") for r in reasons}
                    if "ConditionalCheckFailed" in codes:
                        raise Cancelled(
                            {
                                i: cast("Item | None", r.get("Item"))
                                for i, r in enumerate(reasons)
                                if r.get("Code") == "ConditionalCheckFailed"
                            }
                        ) from None
                    if codes <= {"None", "TransactionConflict", None} and tries.wait():
                        continue
                if code == "TransactionConflictException" and tries.wait():
                    continue
                message = f"mirrors database {self.url} failed ({operation}): {code}: {error.get('Message', '')}"
                if code in _REQUEST_ERRORS:
                    raise MirrorsDatabaseError(message) from None
                raise _DynamoError(message, code) from None
            except BotoCoreError as exc:  # no credentials, endpoint unreachable, timeouts after retries
                raise _DynamoError(f"mirrors database {self.url} failed ({operation}): {exc}", "") from None

    def _transact(self, actions: Sequence[Mapping[str, Any]]) -> None:
        """One all-or-nothing TransactWriteItems of up to 100 actions; ``Cancelled`` when conditions failed."""
        self._call("transact_write_items", TransactItems=list(actions))

    def _get(self, key: Item) -> Item | None:
        """The item at ``key`` (strongly consistent), or None."""
        found: Item | None = self._call("get_item", TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return found

    def _get_many(self, keys: Sequence[Item]) -> list[Item]:
        """The items that exist among ``keys`` (at most 100), strongly consistent, in no particular order."""
        found: list[Item] = []
        pending: list[Item] = list(keys)
        tries = _THROTTLED_READS.start()
        while pending:
            answer = self._call("batch_get_item", RequestItems={self._table: {"Keys": pending, "ConsistentRead": True}})
            found.extend(answer.get("Responses", {}).get(self._table, []))
            pending = answer.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
            if pending and not tries.wait():
                raise MirrorsDatabaseError(
                    f"mirrors database {self.url}: reads stayed throttled after {tries.attempts} tries"
                )
        return found

    def _query(self, **kwargs: Any) -> list[Item]:
        """Every item of a strongly consistent Query, page after page."""
        items: list[Item] = []
        start: Item | None = None
        while True:
            page_args = {"TableName": self._table, "ConsistentRead": True, **kwargs}
            if start is not None:
                page_args["ExclusiveStartKey"] = start
            answer = self._call("query", **page_args)
            items.extend(answer.get("Items", []))
            start = answer.get("LastEvaluatedKey")
            if start is None:
                return items

    def _count(self, **kwargs: Any) -> int:
        """How many items a strongly consistent Query matches."""
        count = 0
        start: Item | None = None
        while True:
            page_args = {"TableName": self._table, "ConsistentRead": True, "Select": "COUNT", **kwargs}
            if start is not None:
                page_args["ExclusiveStartKey"] = start
            answer = self._call("query", **page_args)
            count += int(answer.get("Count", 0))
            start = answer.get("LastEvaluatedKey")
            if start is None:
                return count

    def _conditional_writes(self, actions: Sequence[Mapping[str, Any]]) -> int:
        """Apply conditional Put/Delete actions; returns how many had their condition hold and were applied.

        In transactions of up to 100 actions when no other writer interferes; when a condition in one fails
        (another writer got there first), that batch is applied action by action, so each counts once.
        """
        applied = 0
        for start in range(0, len(actions), TRANSACT_MAX):
            batch = actions[start : start + TRANSACT_MAX]
            try:
                self._transact(batch)
                applied += len(batch)
                continue
            except Cancelled:
                pass
            for action in batch:
                ((kind, args),) = action.items()
                try:
                    self._call("put_item" if kind == "Put" else "delete_item", **args)
                    applied += 1
                except ConditionFailed:
                    pass
        return applied


def make_client(settings: DynamoDBSettings, *, section: str = "mirrors_database") -> tuple[Any, str]:
    """A DynamoDB client and its region: the settings' keys or profile, else the AWS chain; no region at all
    is a clear error rather than botocore's (naming the config ``section`` the settings come from)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    try:
        session = boto3.session.Session(region_name=settings.aws_region or None)
        if settings.aws_profile:
            if settings.aws_profile not in session.available_profiles:
                raise MirrorsDatabaseError(
                    f"{section}.dynamodb.aws_profile: no AWS profile {settings.aws_profile!r} in the AWS "
                    "config and credentials files"
                )
            session = boto3.session.Session(profile_name=settings.aws_profile, region_name=settings.aws_region or None)
        region = session.region_name
    except BotoCoreError as exc:  # an unreadable AWS config file
        raise MirrorsDatabaseError(f"AWS configuration for {section}.dynamodb: {exc}") from None
    if not region:
        raise MirrorsDatabaseError(
            f"no AWS region for the DynamoDB table {settings.table_name!r} of {section}: set "
            f"{section}.dynamodb.aws_region (or AWS_REGION)"
        )
    client = session.client(
        "dynamodb",
        endpoint_url=settings.endpoint or None,
        aws_access_key_id=settings.aws_access_key_id or None,
        aws_secret_access_key=settings.aws_secret_access_key.reveal() or None,
        config=Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30),
    )
    return client, region
