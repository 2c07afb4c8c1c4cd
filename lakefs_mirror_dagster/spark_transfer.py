"""Object transfer on Spark: the new ranges of a metarange spread over Spark tasks, one range at a time.

Each task builds its own access to the source (its store, or its lakeFS API) and to the destination store
from the typed store settings (``StoreSpec``, secrets still wrapped until the client is made); those hold
credentials, so they travel in a broadcast variable and never in a task's serialized closure. A task reads
the range file from the source, copies the objects the destination lacks (or has with another size) on a
``TransferPool`` (streamed, multipart, server-side when possible), retries what failed a bounded number of
times with backoff, and writes the range file only when every object arrived. The driver collects one small
``RangeTransferSummary`` per range, never the list of objects.

Small plans do not pay Spark's scheduling cost: ``ThresholdTransferer`` counts the objects the new ranges
will copy or check (``changed_object_counter``) and sends only plans of at least ``threshold`` objects to
Spark.
"""

from __future__ import annotations

import collections
import functools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import ReplicationConfig
from .graveler.range_id import verify_range_file
from .graveler.ranges import iter_entry_locations, iter_range_refs
from .graveler.sstable import SSTableError
from .lakefs import Commit, LakeFSClient, LakeFSError
from .mirrors import Mirror
from .replication.copy_plan import plan_range_copies
from .replication.engine import MirrorEngine, RangeBatch, RangeTransferer, RangeValidator
from .replication.failpoints import failpoint
from .replication.results import TransferStats
from .replication.service import ReplicationService, store_spec
from .replication.source import ApiObjectReader, RepositorySource
from .replication.validation import MAX_REPORTED, metadata_uri, present_entries
from .storage import Blockstore, StorageError, TransferPool
from .storage.uri import join_namespace

__all__ = [
    "PATH_IN_PROCESS",
    "PATH_SPARK",
    "LazySparkSession",
    "ObjectCounter",
    "RangeTransferSummary",
    "SparkRangeTransferer",
    "SparkTransferError",
    "SparkTransferService",
    "ThresholdTransferer",
    "TransferTarget",
    "changed_object_counter",
    "choose_transferer",
    "local_transferer",
    "metarange_object_counter",
    "spark_transferer_for",
    "transfer_range",
]

log = logging.getLogger(__name__)

PATH_SPARK = "spark"
PATH_IN_PROCESS = "in_process"


class SparkTransferError(RuntimeError):
    """Spark could not transfer a batch of ranges (a task crashed, or a range file was unreadable)."""


@dataclass(frozen=True)
class TransferTarget:
    """What a task needs besides credentials: safe to ship in the closure (no secrets in here)."""

    repository: str
    source_namespace: str
    destination_namespace: str
    concurrency: int = 16
    retry_rounds: int = 2
    retry_backoff_seconds: float = 1.0


@dataclass
class RangeTransferSummary:
    """What transferring one range did; small and picklable, so it is all a task sends back."""

    range_id: str
    objects: int = 0
    copied: int = 0
    skipped: int = 0
    unchanged: int = 0
    bytes_copied: int = 0
    retried: int = 0
    full_address_count: int = 0
    full_address_examples: list[str] = field(default_factory=list)
    failed_count: int = 0
    failed: list[str] = field(default_factory=list)
    checks: dict[str, int] = field(default_factory=dict)
    range_written: bool = False
    error: str | None = None

    def add_to(self, stats: TransferStats) -> None:
        """Fold this range into the engine's stats, as the in-process transfer counts it."""
        if self.error is None:
            stats.ranges_read_from_source += 1
        stats.objects_copied += self.copied
        stats.objects_skipped += self.skipped
        stats.objects_unchanged += self.unchanged
        stats.bytes_copied += self.bytes_copied
        stats.note_checks(self.checks)
        stats.full_address_objects += self.full_address_count
        stats.full_address_examples.extend(
            self.full_address_examples[: MAX_REPORTED - len(stats.full_address_examples)]
        )
        stats.failed_object_count += self.failed_count
        stats.failed_objects.extend(self.failed[: MAX_REPORTED - len(stats.failed_objects)])
        stats.ranges_transferred += self.range_written


class _TaskSource:
    """Read access to the source from inside a task: its store when configured, else its lakeFS API."""

    def __init__(self, target: TransferTarget, store: Blockstore | None, client: LakeFSClient | None) -> None:
        if store is None and client is None:
            raise ValueError("a transfer source needs a store or a lakeFS client")
        self._target = target
        self._store = store
        self._client = client
        self._api = ApiObjectReader(client) if client is not None else None

    def read_range(self, range_id: str) -> bytes:
        if self._store is not None:
            return self._store.read_bytes(metadata_uri(self._target.source_namespace, range_id))
        assert self._client is not None
        return self._client.get_metadata_object(self._target.repository, "range", range_id)

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        if self._store is not None:
            return self._store, join_namespace(self._target.source_namespace, address)
        assert self._api is not None
        return self._api, ApiObjectReader.uri(self._target.repository, commit_id, key)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def transfer_range(
    source: _TaskSource,
    destination: Blockstore,
    target: TransferTarget,
    range_id: str,
    commit_id: str,
    pool: TransferPool,
    *,
    base_ranges: Sequence[str] = (),
    sleep: Callable[[float], None] = time.sleep,
) -> RangeTransferSummary:
    """Copy one range's missing objects, then write its range file when all of them are there. Entries
    unchanged from ``base_ranges`` (validated ranges it replaces) are skipped without a look.

    Never raises for a storage or data problem: the summary says what failed, and a range with any
    failure gets no range file, so the engine refuses to promote.
    """
    summary = RangeTransferSummary(range_id)
    try:
        data = source.read_range(range_id)
        sst = verify_range_file(data, range_id)
        copies = plan_range_copies(
            sst,
            present=present_entries(destination, target.destination_namespace, base_ranges),
            locate=lambda key, address: source.object_location(commit_id, key, address),
            destination=destination,
            destination_namespace=target.destination_namespace,
        )
        summary.objects = copies.objects
        summary.unchanged = copies.unchanged
        summary.full_address_count = copies.full_address_count
        summary.full_address_examples = copies.full_address_examples
        pending = copies.tasks
        failures: list[str] = []
        for round_no in range(target.retry_rounds + 1):
            if round_no:
                sleep(target.retry_backoff_seconds * 2 ** (round_no - 1))
                summary.retried += len(pending)
            result = pool.run(pending, copies.destination_stats)
            summary.copied += result.copied
            summary.skipped += result.skipped
            summary.bytes_copied += result.bytes_copied
            for check, count in result.checks.items():
                summary.checks[check] = summary.checks.get(check, 0) + count
            failed_uris = {f.src_uri for f in result.failed}
            failures = [f.describe() for f in result.failed]
            pending = [t for t in pending if t.src_uri in failed_uris]
            if not pending:
                break
        if pending:
            summary.failed_count = len(pending)
            summary.failed = failures[:MAX_REPORTED]
            return summary
        failpoint("before_range_file")
        destination.write_bytes(metadata_uri(target.destination_namespace, range_id), data)
        summary.range_written = True
        failpoint("after_range_file")
    except (SSTableError, StorageError, LakeFSError) as exc:
        summary.error = f"range {range_id}: {type(exc).__name__}: {exc}"
    return summary


def _task_access(secrets: Mapping[str, Any], target: TransferTarget) -> tuple[_TaskSource, Blockstore]:
    """Stores and clients built inside the task from the broadcast settings."""
    src_spec = secrets.get("source_store")
    src_store = src_spec.build() if src_spec else None
    client = None
    if src_store is None:
        api = secrets["source_lakefs"]
        client = LakeFSClient(api["endpoint"], api["access_key_id"], api["secret_access_key"].reveal())
    return _TaskSource(target, src_store, client), secrets["destination_store"].build()


def _transfer_partition(
    secrets: Any, target: TransferTarget, commit_id: str, ranges: Iterable[tuple[str, tuple[str, ...]]]
) -> Iterator[RangeTransferSummary]:
    """Runs inside a Spark task: one source, destination and pool per partition, then its (range, bases)."""
    source, destination = _task_access(secrets.value, target)
    pool = TransferPool(concurrency=target.concurrency, on_result=lambda _r: failpoint("after_object_copy"))
    try:
        for range_id, base_ranges in ranges:
            yield transfer_range(source, destination, target, range_id, commit_id, pool, base_ranges=base_ranges)
    finally:
        source.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


class SparkRangeTransferer:
    """A ``RangeTransferer`` whose work runs in Spark tasks (ranges spread over up to ``max_partitions``).

    ``session`` returns the SparkSession and is only called when a batch arrives, so a sync that never
    reaches the threshold never starts Spark. ``secrets`` holds ``destination_store`` and either
    ``source_store`` (both ``StoreSpec``) or ``source_lakefs`` (endpoint, key and ``Secret``); it is
    broadcast per call and destroyed after. ``summaries`` keeps the per-range results, for reporting.
    """

    def __init__(
        self, session: Callable[[], Any], secrets: Mapping[str, Any], target: TransferTarget, *, max_partitions: int
    ) -> None:
        if max_partitions < 1:
            raise ValueError(f"max_partitions must be at least 1, got {max_partitions}")
        if "destination_store" not in secrets or not (secrets.get("source_store") or secrets.get("source_lakefs")):
            raise ValueError("secrets need destination_store and one of source_store or source_lakefs")
        self._session = session
        self._secrets = dict(secrets)
        self.target = target
        self.max_partitions = max_partitions
        self.summaries: list[RangeTransferSummary] = []

    def __call__(self, batch: RangeBatch, commit: Commit, stats: TransferStats) -> None:
        ids = list(batch)
        if not ids:
            return
        sc = self._session().sparkContext
        secrets = sc.broadcast(self._secrets)
        try:
            task = functools.partial(_transfer_partition, secrets, self.target, commit.id)
            pairs = [(rid, tuple(batch[rid])) for rid in ids]
            rdd = sc.parallelize(pairs, numSlices=min(len(ids), self.max_partitions))
            try:
                results: list[RangeTransferSummary] = rdd.mapPartitions(task).collect()
            except Exception as exc:  # a crashed task: nothing is promoted, the next run resumes
                raise SparkTransferError(f"Spark transfer of {len(ids)} range(s) failed: {_first_line(exc)}") from exc
        finally:
            secrets.destroy()
        self.summaries.extend(results)
        for summary in results:
            summary.add_to(stats)
        by_id = {s.range_id: s for s in results}
        lost = [rid for rid in ids if rid not in by_id]
        errors = [s.error for s in results if s.error]
        if lost:  # a lost task must not read as "transferred"
            raise SparkTransferError(f"Spark returned no transfer summary for {len(lost)} range(s), e.g. {lost[0]}")
        if errors:
            raise SparkTransferError(f"{len(errors)} range(s) could not be transferred: " + "; ".join(errors[:5]))


# ---------------------------------------------------------------------------------------------- choosing


#: Objects a batch of ranges will copy or check, for the Spark-or-in-process choice.
ObjectCounter = Callable[[RangeBatch, Commit], int]


def metarange_object_counter(read_metarange: Callable[[str], bytes]) -> Callable[[Sequence[str], Commit], int]:
    """Objects in a batch of ranges, from the records of the commit's metarange (read once per metarange)."""
    cache: dict[str, dict[str, int]] = {}

    def count(range_ids: Sequence[str], commit: Commit) -> int:
        mr = commit.metarange_id
        if mr not in cache:
            data = read_metarange(mr)
            cache.clear()  # one metarange at a time: the engine works through them in order
            cache[mr] = {ref.range_id: ref.count for ref in iter_range_refs(verify_range_file(data, mr))}
        counts = cache[mr]
        return sum(counts.get(rid, 0) for rid in range_ids)

    return count


def changed_object_counter(
    read_metarange: Callable[[str], bytes],
    read_range: Callable[[str], bytes],
    destination: Blockstore,
    destination_namespace: str,
) -> ObjectCounter:
    """Objects a batch will copy or check: all of a new range's (from the metarange records), but for a range
    that rewrites validated base ranges only its entries that differ from them. Those ranges are read and
    compared here, as the transfer will: a 50,000-entry range rewritten to insert one key is one object,
    which does not start Spark."""
    records = metarange_object_counter(read_metarange)

    def count(batch: RangeBatch, commit: Commit) -> int:
        total = records([rid for rid, bases in batch.items() if not bases], commit)
        for rid, bases in batch.items():
            if bases:
                present = present_entries(destination, destination_namespace, bases)
                entries = iter_entry_locations(verify_range_file(read_range(rid), rid))
                total += sum(1 for entry in entries if entry not in present and not entry[2])
        return total

    return count


class ThresholdTransferer:
    """A ``RangeTransferer`` that sends a batch to Spark only when it holds at least ``threshold`` objects.

    ``last_choice`` and ``choices`` record which path ran (for the asset's metadata); the stats of a call
    get ``transfer_path`` set too (``"in_process"``, ``"spark"``, or both joined by ``+``).
    """

    def __init__(
        self,
        *,
        spark: RangeTransferer,
        in_process: RangeTransferer,
        count_objects: ObjectCounter,
        threshold: int,
    ) -> None:
        if threshold < 0:
            raise ValueError(f"threshold must not be negative, got {threshold}")
        self.spark = spark
        self.in_process = in_process
        self.count_objects = count_objects
        self.threshold = threshold
        self.last_choice: str | None = None
        self.last_object_count: int = 0
        self.choices: collections.Counter[str] = collections.Counter()

    def choose(self, batch: RangeBatch, commit: Commit) -> str:
        self.last_object_count = self.count_objects(batch, commit)
        return PATH_SPARK if self.last_object_count >= self.threshold else PATH_IN_PROCESS

    def __call__(self, batch: RangeBatch, commit: Commit, stats: TransferStats) -> None:
        path = self.choose(batch, commit)
        self.last_choice = path
        self.choices[path] += 1
        stats.note_path(path)
        log.info("transferring %d range(s), %d object(s): %s", len(batch), self.last_object_count, path)
        (self.spark if path == PATH_SPARK else self.in_process)(batch, commit, stats)


def choose_transferer(
    *,
    spark: RangeTransferer,
    in_process: RangeTransferer,
    count_objects: ObjectCounter,
    threshold: int,
) -> ThresholdTransferer:
    """The transferer that picks Spark or in-process per call by object count (see ``ThresholdTransferer``)."""
    return ThresholdTransferer(spark=spark, in_process=in_process, count_objects=count_objects, threshold=threshold)


# ---------------------------------------------------------------------------------------------- wiring


def _secrets_for(service: ReplicationService, mirror: Mirror) -> dict[str, Any]:
    config: ReplicationConfig = service.config
    secrets: dict[str, Any] = {"destination_store": store_spec(config, config.store_by_id(mirror.storage_id))}
    src_store = config.source_store_for(mirror.source_region)
    if src_store is not None:
        secrets["source_store"] = store_spec(config, src_store)
    else:
        creds = config.lakefs_credentials_for(mirror.source_region)
        secrets["source_lakefs"] = {
            "endpoint": config.endpoint_for(mirror.source_region),
            "access_key_id": creds.access_key_id,
            "secret_access_key": creds.secret_access_key,
        }
    return secrets


def local_transferer(secrets: Mapping[str, Any], target: TransferTarget) -> RangeTransferer:
    """The same per-range work as a Spark task, run in this process (when no engine path is given)."""

    def run(batch: RangeBatch, commit: Commit, stats: TransferStats) -> None:
        source, destination = _task_access(secrets, target)
        pool = TransferPool(concurrency=target.concurrency, on_result=lambda _r: failpoint("after_object_copy"))
        try:
            for range_id, base_ranges in batch.items():
                summary = transfer_range(
                    source, destination, target, range_id, commit.id, pool, base_ranges=base_ranges
                )
                summary.add_to(stats)
                if summary.error:
                    raise SparkTransferError(summary.error)
        finally:
            source.close()

    return run


def spark_transferer_for(
    service: ReplicationService,
    mirror: Mirror,
    session: Callable[[], Any],
    *,
    in_process: RangeTransferer | None = None,
    threshold: int | None = None,
    max_partitions: int | None = None,
) -> ThresholdTransferer:
    """The transferer for ``mirror``: Spark above the configured threshold, ``in_process`` below it.

    ``in_process`` is normally the engine's own ``transfer_ranges``; without it the Spark task's code
    runs in this process. ``threshold`` and ``max_partitions`` default to the config's ``spark`` section.
    """
    config = service.config
    src_client = service.client(mirror.source_region)
    src_repo = src_client.get_repository(mirror.source_repository)
    target = TransferTarget(
        repository=mirror.source_repository,
        source_namespace=src_repo.storage_namespace,
        destination_namespace=mirror.storage_namespace,
        concurrency=config.transfer.concurrency,
    )
    secrets = _secrets_for(service, mirror)
    reader = RepositorySource(
        src_client,
        mirror.source_repository,
        src_repo.storage_namespace,
        store=service.source_store(mirror.source_region),
    )
    spark_path = SparkRangeTransferer(
        session,
        secrets,
        target,
        max_partitions=max_partitions if max_partitions is not None else config.spark.transfer_max_partitions,
    )
    return choose_transferer(
        spark=spark_path,
        in_process=in_process or local_transferer(secrets, target),
        count_objects=changed_object_counter(
            functools.partial(reader.read_metadata, "meta_range"),
            functools.partial(reader.read_metadata, "range"),
            service.destination_store(mirror.storage_id),
            mirror.storage_namespace,
        ),
        threshold=threshold if threshold is not None else config.spark.transfer_threshold_objects,
    )


class SparkTransferService(ReplicationService):
    """A ``ReplicationService`` whose engines transfer on Spark (above the threshold): what ``sync --spark`` runs."""

    def __init__(self, config: ReplicationConfig, session: Callable[[], Any], **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.session = session
        self.transferers: dict[str, ThresholdTransferer] = {}

    def engine_for(
        self,
        mirror: Mirror,
        *,
        validator: RangeValidator | None = None,
        transferer: RangeTransferer | None = None,
    ) -> MirrorEngine:
        engine = super().engine_for(mirror, validator=validator, transferer=transferer)
        if transferer is None:
            chosen = spark_transferer_for(self, mirror, self.session, in_process=engine.transfer_ranges)
            self.transferers[mirror.name] = chosen
            engine.transferer = chosen
        return engine


class LazySparkSession:
    """A SparkSession built from ``conf`` on first call (``sync --spark`` with only small commits never starts one)."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        self.conf = dict(conf)
        self._session: Any = None

    def __call__(self) -> Any:
        if self._session is None:
            import os
            import sys

            from pyspark.sql import SparkSession

            # Python workers must import this package: run them with this interpreter unless told otherwise.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            builder = SparkSession.builder
            for key, value in self.conf.items():
                builder = builder.config(key, value)
            self._session = builder.getOrCreate()
        return self._session

    @property
    def started(self) -> bool:
        return self._session is not None

    def stop(self) -> None:
        if self._session is not None:
            self._session.stop()
            self._session = None
