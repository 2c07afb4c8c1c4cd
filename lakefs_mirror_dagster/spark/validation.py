"""Range validation on Spark: one task per slice of range IDs, each reading the destination store itself.

Batches of fewer than ``min_ranges`` ranges (a commit that touched a few files) are validated in this
process with the same ``validate_range``: starting a Spark session costs tens of seconds, checking a
handful of ranges well under one, and the session is only ever started when a batch reaches the threshold.

The driver sends only range IDs, the namespace and the strictness flag in the task closure; the store's
``StoreSpec`` (typed settings whose credentials are ``Secret``s) travels in a broadcast variable, so it never
appears in a task's serialized closure, in Spark's logs or in Dagster's event log. Each task builds its own
blockstore from it and calls the same ``validate_range`` the in-process validator uses.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..replication import RangeBatch, RangeValidation, in_process_validator, validate_range
from .errors import SparkValidationError

if TYPE_CHECKING:
    from ..storage import StoreSpec

__all__ = ["SparkRangeValidator"]


def _validate_partition(
    settings: Any, namespace: str, strict: bool, ranges: Iterable[tuple[str, tuple[str, ...]]]
) -> Iterator[RangeValidation]:
    """Runs inside a Spark task: one blockstore per partition, then every (range, its bases) of the partition."""
    store = settings.value.build()  # the broadcast StoreSpec
    for range_id, base_ranges in ranges:
        yield validate_range(store, namespace, range_id, strict_full_addresses=strict, base_ranges=base_ranges)


class SparkRangeValidator:
    """A ``RangeValidator`` (``Callable[[RangeBatch], list[RangeValidation]]``) backed by Spark.

    ``failures`` keeps the failed validations of every call, so the asset can report which objects were
    missing; ``paths`` says where batches ran (``spark``, ``in_process``). ``session`` is called only when
    a batch of at least ``min_ranges`` ranges arrives.
    """

    def __init__(
        self,
        session: Callable[[], Any],
        store: StoreSpec,
        namespace: str,
        *,
        strict_full_addresses: bool,
        num_partitions: int,
        min_ranges: int = 0,
        local_workers: int = 3,
    ) -> None:
        if num_partitions < 1:
            raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
        if min_ranges < 0:
            raise ValueError(f"min_ranges must be at least 0, got {min_ranges}")
        self._session = session
        self.min_ranges = min_ranges
        self.local_workers = max(1, local_workers)
        self.paths: set[str] = set()
        self._store = store
        self.namespace = namespace
        self.strict_full_addresses = strict_full_addresses
        self.num_partitions = num_partitions
        self.failures: list[RangeValidation] = []
        self.validated: int = 0
        self._lock = threading.Lock()  # branches of one pass may validate at once (branch_workers.py)

    def __call__(self, batch: RangeBatch) -> list[RangeValidation]:
        ids = list(batch)
        if not ids:
            return []
        if len(ids) < self.min_ranges:
            return self._record(ids, self._validate_here(batch), "in_process")
        sc = self._session().sparkContext
        settings = sc.broadcast(self._store)
        try:
            task = functools.partial(_validate_partition, settings, self.namespace, self.strict_full_addresses)
            pairs = [(rid, tuple(batch[rid])) for rid in ids]
            rdd = sc.parallelize(pairs, numSlices=min(len(ids), self.num_partitions))
            results: list[RangeValidation] = rdd.mapPartitions(task).collect()
        finally:
            settings.destroy()
        by_id = {r.range_id: r for r in results}
        missing = [rid for rid in ids if rid not in by_id]
        if missing:  # a lost task must not read as "valid"
            raise SparkValidationError(f"Spark returned no validation for {len(missing)} range(s), e.g. {missing[0]}")
        return self._record(ids, [by_id[rid] for rid in ids], "spark")

    def _validate_here(self, batch: RangeBatch) -> list[RangeValidation]:
        store = self._store.build()
        validate = in_process_validator(
            store, self.namespace, workers=self.local_workers, strict=self.strict_full_addresses
        )
        return validate(batch)

    def _record(self, ids: list[str], results: list[RangeValidation], path: str) -> list[RangeValidation]:
        with self._lock:
            self.paths.add(path)
            self.validated += len(results)
            self.failures.extend(r for r in results if not r.ok)
        return results
