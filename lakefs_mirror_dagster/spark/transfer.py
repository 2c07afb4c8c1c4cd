"""Object transfer on Spark: the new ranges of a metarange spread over Spark tasks.

Each task builds its own access to the source (its store, or its lakeFS API) and to the destination store
from plain settings; those settings hold credentials, so they travel in a broadcast variable and never in a
task's serialized closure. A task runs ``replication.transfer_range`` (the same code as the engine's own
pool) for each of its ranges; the driver collects one small ``RangeTransferSummary`` per range, never the
list of objects.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..config import AUTO, Concurrency
from ..lakefs import Commit, LakeFSClient
from ..replication import RangeBatch, RangeTransferSummary, SourceReader, SyncingRef, TransferStats, transfer_range
from ..replication.failpoints import failpoint
from ..storage import DEFAULT_MAX_BYTES_IN_FLIGHT, TokenBucket, TransferPool
from .errors import SparkTransferError

__all__ = ["SparkRangeTransferer", "TransferTarget", "task_share", "transfer_partition"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TransferTarget:
    """What a task needs besides credentials: safe to ship in the closure (no secrets in here)."""

    repository: str
    source_namespace: str
    destination_namespace: str
    #: Each task's pool: that many copies in flight, or ``auto``, measured by each task on its own reads.
    concurrency: Concurrency = AUTO
    max_bytes_in_flight: int = DEFAULT_MAX_BYTES_IN_FLIGHT
    #: The process's ``transfer.max_bytes_per_second``; each task of a batch gets an equal share of it.
    max_bytes_per_second: int = 0


def transfer_partition(
    secrets: Mapping[str, Any], target: TransferTarget, commit_id: str, ranges: Iterable[tuple[str, tuple[str, ...]]]
) -> Iterator[RangeTransferSummary]:
    """One task's work: a source reader, a destination store and a pool built from ``secrets``, then
    ``transfer_range`` for each (range, its base ranges)."""
    src_spec = secrets.get("source_store")
    client = None
    if src_spec is None:
        api = secrets["source_lakefs"]
        client = LakeFSClient(api["endpoint"], api["access_key_id"], api["secret_access_key"].reveal())
    source = SourceReader(
        target.repository,
        target.source_namespace,
        store=src_spec.build() if src_spec is not None else None,
        client=client,
    )
    destination = secrets["destination_store"].build()
    pool = TransferPool(
        concurrency=target.concurrency,
        max_bytes_in_flight=target.max_bytes_in_flight,
        limiter=TokenBucket(target.max_bytes_per_second) if target.max_bytes_per_second > 0 else None,
        on_result=lambda _r: failpoint("after_object_copy"),
    )
    try:
        for range_id, base_ranges in ranges:
            yield transfer_range(
                source, destination, target.destination_namespace, range_id, commit_id, pool, base_ranges=base_ranges
            )
    finally:
        if client is not None:
            client.close()


def task_share(target: TransferTarget, tasks: int) -> TransferTarget:
    """``target`` for one of ``tasks`` tasks running at once: an equal share of the byte rate (at least 1 byte
    per second), so together they stay within the process's ``transfer.max_bytes_per_second``."""
    if target.max_bytes_per_second <= 0:
        return target
    return dataclasses.replace(target, max_bytes_per_second=max(1, target.max_bytes_per_second // max(tasks, 1)))


def _in_task(
    secrets: Any, target: TransferTarget, commit_id: str, ranges: Iterable[tuple[str, tuple[str, ...]]]
) -> Iterator[RangeTransferSummary]:
    """Runs inside a Spark task: the broadcast's value is read there, never shipped in the closure."""
    return transfer_partition(secrets.value, target, commit_id, ranges)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


class SparkRangeTransferer:
    """A ``RangeTransferer`` whose work runs in Spark tasks (ranges spread over up to ``max_partitions``).

    ``session`` returns the SparkSession and is only called when a batch arrives. ``secrets`` holds
    ``destination_store`` and either ``source_store`` (both ``StoreSpec``) or ``source_lakefs`` (endpoint,
    key and ``Secret``); it is broadcast per call and destroyed after. ``summaries`` keeps the per-range
    results, for reporting.
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

    def __call__(self, batch: RangeBatch, commit: Commit, stats: TransferStats, ref: SyncingRef) -> None:
        """The batch on Spark; ``ref``'s progress does not count the objects of its tasks one by one."""
        ids = list(batch)
        if not ids:
            return
        sc = self._session().sparkContext
        secrets = sc.broadcast(self._secrets)
        try:
            slices = min(len(ids), self.max_partitions)
            task = functools.partial(_in_task, secrets, task_share(self.target, slices), commit.id)
            pairs = [(rid, tuple(batch[rid])) for rid in ids]
            rdd = sc.parallelize(pairs, numSlices=slices)
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
