"""Range validation on Spark: one task per slice of range IDs, each reading the destination store itself.

The driver sends only range IDs, the namespace and the strictness flag in the task closure; the store
settings (which hold credentials) travel in a broadcast variable, so they never appear in a task's
serialized closure, in Spark's logs or in Dagster's event log. Each task builds its own blockstore from
those plain settings and calls the same ``validate_range`` the in-process validator uses.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .replication.validation import RangeValidation, validate_range
from .storage import build_blockstore

__all__ = ["SparkRangeValidator"]


def _validate_partition(
    settings: Any, namespace: str, strict: bool, range_ids: Iterable[str]
) -> Iterator[RangeValidation]:
    """Runs inside a Spark task: one blockstore per partition, then every range of the partition."""
    store = build_blockstore(settings.value)
    for range_id in range_ids:
        yield validate_range(store, namespace, range_id, strict_full_addresses=strict)


class SparkRangeValidator:
    """A ``RangeValidator`` (``Callable[[Sequence[str]], list[RangeValidation]]``) backed by Spark.

    ``failures`` keeps the failed validations of the last call, so the asset can report which objects
    were missing.
    """

    def __init__(
        self,
        spark: Any,
        store_settings: Mapping[str, Any],
        namespace: str,
        *,
        strict_full_addresses: bool,
        num_partitions: int,
    ) -> None:
        if num_partitions < 1:
            raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
        self._spark = spark
        self._settings = dict(store_settings)
        self.namespace = namespace
        self.strict_full_addresses = strict_full_addresses
        self.num_partitions = num_partitions
        self.failures: list[RangeValidation] = []
        self.validated: int = 0

    def __call__(self, range_ids: Sequence[str]) -> list[RangeValidation]:
        ids = list(range_ids)
        if not ids:
            return []
        sc = self._spark.sparkContext
        settings = sc.broadcast(self._settings)
        try:
            task = functools.partial(_validate_partition, settings, self.namespace, self.strict_full_addresses)
            rdd = sc.parallelize(ids, numSlices=min(len(ids), self.num_partitions))
            results: list[RangeValidation] = rdd.mapPartitions(task).collect()
        finally:
            settings.destroy()
        by_id = {r.range_id: r for r in results}
        missing = [rid for rid in ids if rid not in by_id]
        if missing:  # a lost task must not read as "valid"
            raise RuntimeError(f"Spark returned no validation for {len(missing)} range(s), e.g. {missing[0]}")
        self.validated += len(results)
        self.failures.extend(r for r in results if not r.ok)
        return [by_id[rid] for rid in ids]
