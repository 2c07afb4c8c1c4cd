"""Commit records written straight into the mirror lakeFS's key-value store (``refstore_database``: PostgreSQL
or DynamoDB).

Why: lakeFS orders a log by each commit's full-precision creation time, then by ID, while its
``CreateCommitRecord`` API takes whole seconds; commits made within one second would be listed in another
order at the mirror. Here the record lakeFS's ref manager would write is written directly, with the source's
nanoseconds, which the source's own refs dump carries (its commits metarange, read like any range file).

Safe alongside a running lakeFS: a commit record is immutable and keyed by its ID, lakeFS caches only commits
it found (never a miss), and a record is written before any branch or tag points at it, so lakeFS reads it
first when it is already complete. Table and key layout: ``graveler.commit_record``.
"""

from __future__ import annotations

import bisect
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..backoff import Backoff
from ..config import DynamoDBSettings
from ..config.database import RefstoreDatabaseConfig
from ..errors import require_extra
from ..graveler import CommitData, GravelerError, iter_commits, iter_range_refs, verify_range_file
from ..graveler.commit_record import (
    REPOSITORIES_PARTITION,
    commit_key,
    encode_commit_data,
    repository_key,
    repository_partition,
    repository_record,
)
from ..lakefs import Commit, LakeFSClient
from ..mirrors import MirrorsDatabaseError
from ..mirrors.dynamodb.table import make_client
from .aside import aside
from .errors import ReplicationError

__all__ = [
    "DEFAULT_DYNAMODB_TABLE",
    "DEFAULT_TABLE",
    "DynamoRefstore",
    "PostgresRefstore",
    "Refstore",
    "SourceCommitTimes",
    "commit_data",
    "open_refstore",
]

log = logging.getLogger(__name__)

#: DynamoDB's ``UnprocessedItems`` (throttled writes of a batch) are sent again on this schedule.
_UNPROCESSED = Backoff(base=0.05, cap=2.0, attempts=8)

#: lakeFS's key-value table unless the connection string names another (``lakefskv_table``).
DEFAULT_TABLE = "kv"
#: lakeFS's DynamoDB table unless ``dynamodb.table_name`` names another.
DEFAULT_DYNAMODB_TABLE = "kvstore"
_TABLE_PARAM = "lakefskv_table"


def commit_data(commit: Commit, nanos: int = 0) -> CommitData:
    """The record of ``commit`` with ``nanos`` below its whole second."""
    return CommitData(
        id=commit.id,
        committer=commit.committer,
        message=commit.message,
        creation_date_seconds=commit.creation_date,
        creation_date_nanos=nanos,
        meta_range_id=commit.metarange_id,
        metadata=dict(commit.metadata),
        parents=tuple(commit.parents),
        version=commit.version,
        generation=commit.generation,
    )


def _split_table(connection_string: str) -> tuple[str, str]:
    """(libpq connection string, lakeFS's table name): lakeFS reads ``lakefskv_table`` from the string's
    parameters, which libpq would refuse."""
    text = connection_string.strip()
    if "://" in text:
        parts = urlsplit(text)
        query = parse_qsl(parts.query, keep_blank_values=True)
        table = next((v for k, v in query if k == _TABLE_PARAM), DEFAULT_TABLE)
        rest = urlencode([(k, v) for k, v in query if k != _TABLE_PARAM])
        return urlunsplit(parts._replace(query=rest)), table
    words, table = [], DEFAULT_TABLE
    for word in text.split():
        key, _, value = word.partition("=")
        if key == _TABLE_PARAM:
            table = value
        else:
            words.append(word)
    return " ".join(words), table


class Refstore:
    """Reads repository records and writes commit records in lakeFS's key-value store; subclasses say how."""

    def __init__(self) -> None:
        self._partitions: dict[str, str] = {}

    def _get(self, what: str, partition: bytes, key: bytes) -> bytes | None:
        raise NotImplementedError

    def _put(self, what: str, rows: Sequence[tuple[bytes, bytes, bytes]]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release the connection (a later call opens another)."""

    def partition(self, repository: str) -> str:
        """The repository's partition key, from its record (its instance UID changes only if re-created)."""
        if repository not in self._partitions:
            value = self._get(
                f"reading repository {repository}", REPOSITORIES_PARTITION.encode(), repository_key(repository).encode()
            )
            if value is None:
                raise ReplicationError(
                    f"repository {repository} has no record in the refstore database ({self.describe()}): "
                    "is refstore_database this region's lakeFS database?"
                )
            try:
                uid, active = repository_record(value)
            except GravelerError as exc:
                raise ReplicationError(f"repository {repository}'s record in the refstore database: {exc}") from None
            if not active:
                raise ReplicationError(f"repository {repository} is being deleted")
            self._partitions[repository] = repository_partition(repository, uid)
        return self._partitions[repository]

    def write_commits(self, repository: str, commits: Sequence[CommitData]) -> None:
        """Write (or overwrite, as ``CreateCommitRecord`` with force does) each commit's record."""
        if commits:
            partition = self.partition(repository).encode()
            rows = [(partition, commit_key(c.id).encode(), encode_commit_data(c)) for c in commits]
            self._put(f"writing {len(rows)} commit record(s) of {repository}", rows)

    def describe(self) -> str:
        raise NotImplementedError


class PostgresRefstore(Refstore):
    """lakeFS's PostgreSQL key-value table (one connection, used under a lock)."""

    def __init__(self, connection_string: str, *, connect_timeout_s: int = 10) -> None:
        require_extra("postgres", "refstore_database (writing commit records into lakeFS's PostgreSQL)", "psycopg")
        super().__init__()
        self._conninfo, self.table = _split_table(connection_string)
        self._timeout = connect_timeout_s
        self._lock = threading.Lock()
        self._conn: Any = None

    def describe(self) -> str:
        return f"PostgreSQL table {self.table!r}"

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=self._timeout)
        return self._conn

    def _run(self, what: str, fn: Callable[[Any], Any]) -> Any:
        """``fn(connection)``, once more on a fresh connection when the first one broke; errors name ``what``."""
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                try:
                    return fn(self._connection())
                except psycopg.OperationalError as exc:
                    self._close_unlocked()
                    if attempt == 2:
                        raise ReplicationError(f"{what} in the refstore database: {exc}".strip()) from None
                except psycopg.Error as exc:
                    raise ReplicationError(f"{what} in the refstore database: {exc}".strip()) from None

    def _get(self, what: str, partition: bytes, key: bytes) -> bytes | None:
        from psycopg import sql

        query = sql.SQL("SELECT value FROM {} WHERE partition_key = %s AND key = %s").format(sql.Identifier(self.table))
        row = self._run(what, lambda c: c.execute(query, (partition, key)).fetchone())
        return None if row is None else bytes(row[0])

    def _put(self, what: str, rows: Sequence[tuple[bytes, bytes, bytes]]) -> None:
        from psycopg import sql

        query = sql.SQL(
            "INSERT INTO {} (partition_key, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (partition_key, key) DO UPDATE SET value = EXCLUDED.value"
        ).format(sql.Identifier(self.table))

        def put(c: Any) -> None:
            with c.transaction():  # a batch lands whole or not at all
                c.cursor().executemany(query, rows)

        self._run(what, put)

    def _close_unlocked(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def close(self) -> None:
        with self._lock:
            self._close_unlocked()


class DynamoRefstore(Refstore):
    """lakeFS's DynamoDB key-value table: items of binary ``PartitionKey``, ``ItemKey`` and ``ItemValue``."""

    def __init__(self, settings: DynamoDBSettings) -> None:
        super().__init__()
        self.table = settings.table_name or DEFAULT_DYNAMODB_TABLE
        self._settings = settings
        self._client: Any = None

    def describe(self) -> str:
        return f"DynamoDB table {self.table!r}"

    def _call(self, what: str, method: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            if self._client is None:
                self._client = make_client(self._settings, section="refstore_database")[0]
            return getattr(self._client, method)(TableName=self.table, **kwargs)
        except (BotoCoreError, ClientError, MirrorsDatabaseError) as exc:
            raise ReplicationError(f"{what} in the refstore database: {exc}") from None

    def _get(self, what: str, partition: bytes, key: bytes) -> bytes | None:
        keys = {"PartitionKey": {"B": partition}, "ItemKey": {"B": key}}
        item = self._call(what, "get_item", Key=keys, ConsistentRead=True).get("Item")
        return None if item is None else bytes(item["ItemValue"]["B"])

    def _put(self, what: str, rows: Sequence[tuple[bytes, bytes, bytes]]) -> None:
        """25 items a request (DynamoDB's ``BatchWriteItem`` limit); what it leaves unprocessed is sent again."""
        items = [
            {"PutRequest": {"Item": {"PartitionKey": {"B": p}, "ItemKey": {"B": k}, "ItemValue": {"B": v}}}}
            for p, k, v in rows
        ]
        for start in range(0, len(items), 25):
            pending: list[Any] = items[start : start + 25]
            retries = _UNPROCESSED.start()
            while True:
                answer = self._call_raw(what, "batch_write_item", RequestItems={self.table: pending})
                pending = answer.get("UnprocessedItems", {}).get(self.table, [])
                if not pending or not retries.wait():
                    break
            if pending:
                raise ReplicationError(f"{what} in the refstore database: {len(pending)} item(s) left unprocessed")

    def _call_raw(self, what: str, method: str, **kwargs: Any) -> Any:
        """``method`` of the client with its own arguments (no ``TableName``: batch calls name tables inside)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            if self._client is None:
                self._client = make_client(self._settings, section="refstore_database")[0]
            return getattr(self._client, method)(**kwargs)
        except (BotoCoreError, ClientError, MirrorsDatabaseError) as exc:
            raise ReplicationError(f"{what} in the refstore database: {exc}") from None


def open_refstore(config: RefstoreDatabaseConfig) -> Refstore:
    """The writer ``refstore_database`` names."""
    if config.type == "dynamodb":
        return DynamoRefstore(config.dynamodb)
    return PostgresRefstore(config.postgres.connection_string.reveal())


class SourceCommitTimes:
    """The source's full-precision commit times, from its refs dump (the API has whole seconds only).

    A dump lists every commit of the repository, so it is run only when a commit is not known yet, and its
    times are kept for the engine's life. ``ahead`` starts the dump for commits about to be transferred, so that
    its round trips (submit, status, the dump's metarange and ranges) overlap the transfer instead of following
    it: over a link of 80 ms they were 0.3-0.5 s of every pass that created commit records.
    """

    def __init__(
        self,
        client: LakeFSClient,
        repository: str,
        read_metadata: Callable[[str, str], bytes],
        *,
        first_poll_s: float = 0.05,
        poll_interval_s: float = 0.2,
        timeout_s: float = 600.0,
    ) -> None:
        """The dump's status is first asked ``first_poll_s`` after it was submitted, then at waits doubling up
        to ``poll_interval_s``, for ``timeout_s`` in all."""
        self._client, self._repo, self._read = client, repository, read_metadata
        self._first_poll_s, self._poll_s, self._timeout_s = first_poll_s, poll_interval_s, timeout_s
        self._nanos: dict[str, int] = {}
        self._lock = threading.Lock()
        self._early: Future[dict[str, int]] | None = None

    def ahead(self, commit_ids: Iterable[str]) -> None:
        """Start a dump beside the caller for those of ``commit_ids`` not known yet, unless one is under way (also
        one that ``nanos`` is making or collecting for another ref: the caller does not wait for it)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            unknown = [c for c in commit_ids if c not in self._nanos]
            if unknown and self._early is None:
                self._early = aside(functools.partial(self._dump, unknown), name=f"refs-dump-{self._repo}")
        finally:
            self._lock.release()

    def nanos(self, commit_ids: Iterable[str]) -> Mapping[str, int]:
        """Each commit's nanoseconds below its second; runs a refs dump of the source if one is unknown (after
        collecting the one ``ahead`` started, whose failure only means a dump now)."""
        wanted = list(commit_ids)
        with self._lock:
            early, self._early = self._early, None
            if early is not None:
                try:
                    self._nanos.update(early.result())
                except Exception as exc:
                    log.debug("the refs dump of %s started ahead failed (%s); dumping again", self._repo, exc)
            unknown = [c for c in wanted if c not in self._nanos]
            if unknown:
                self._nanos.update(self._dump(unknown))
            missing = [c for c in wanted if c not in self._nanos]
            if missing:
                raise ReplicationError(f"source refs dump of {self._repo} lacks commit(s) {', '.join(missing[:5])}")
            return {c: self._nanos[c] for c in wanted}

    def _dump(self, unknown: Sequence[str]) -> dict[str, int]:
        """The times of the commits in the source's refs dump ranges that may hold ``unknown`` commits: the dump
        keeps commits by ID, so only the ranges whose key span covers one are read (an incremental of a long
        history reads one, not all of them)."""
        client, repo = self._client, self._repo
        task = client.call(f"submit refs dump of {repo}", client.repositories.dump_submit, repo, retry=False)
        # lakeFS dumps in the background: asked at once, it is never done, and each status costs a round trip
        polls = Backoff(base=self._first_poll_s, cap=self._poll_s, deadline=self._timeout_s).start()
        time.sleep(self._first_poll_s)
        while True:
            status = client.call(f"refs dump status of {repo}", client.repositories.dump_status, repo, task.id)
            if status.done:
                break
            if not polls.wait():
                raise ReplicationError(f"refs dump of {repo} (task {task.id}) not done after {self._timeout_s:.0f}s")
        if status.error or status.refs is None:
            raise ReplicationError(f"refs dump of {repo} failed: {status.error or 'no refs'}")
        metarange_id = status.refs.commits_meta_range_id
        nanos: dict[str, int] = {}
        if not metarange_id:
            return nanos
        metarange = verify_range_file(self._read("meta_range", metarange_id), metarange_id)
        keys = sorted(c.encode() for c in unknown)
        for ref in iter_range_refs(metarange):
            first = bisect.bisect_left(keys, ref.min_key)
            if first == len(keys) or keys[first] > ref.max_key:
                continue
            sst = verify_range_file(self._read("range", ref.range_id), ref.range_id)
            for _key, _identity, commit in iter_commits(sst):
                nanos[commit.id] = commit.creation_date_nanos
        log.debug("refs dump of %s: %d commit times", repo, len(nanos))
        return nanos
