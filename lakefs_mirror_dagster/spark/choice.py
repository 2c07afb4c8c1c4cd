"""Spark or in-process, per batch: the one place that chooses.

Small plans do not pay Spark's scheduling cost: ``ThresholdTransferer`` counts the objects the new ranges will
copy or check (``changed_object_counter``) and sends only plans of at least ``threshold`` objects to Spark.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Sequence

from ..graveler import iter_range_refs, verify_range_file
from ..lakefs import Commit
from ..replication import RangeBatch, RangeReads, RangeTransferer, SyncingRef, TransferStats, range_changes
from ..replication.validation import base_reader
from ..storage import Blockstore

__all__ = [
    "PATH_IN_PROCESS",
    "PATH_SPARK",
    "ObjectCounter",
    "ThresholdTransferer",
    "changed_object_counter",
    "metarange_object_counter",
]

log = logging.getLogger(__name__)

PATH_SPARK = "spark"
PATH_IN_PROCESS = "in_process"

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
    reads: RangeReads | None = None,
) -> ObjectCounter:
    """Objects a batch will copy or check: all of a new range's (from the metarange records), but for a range
    that rewrites validated base ranges only its entries that differ from them. Those ranges are read and
    compared here, as the transfer will (``range_changes``; with the engine's ``reads`` an in-process transfer
    then reuses the comparison): a 50,000-entry range rewritten to insert one key is one object, which does
    not start Spark."""
    records = metarange_object_counter(read_metarange)
    read_base = base_reader(destination, destination_namespace)

    def count(batch: RangeBatch, commit: Commit) -> int:
        total = records([rid for rid, bases in batch.items() if not bases], commit)
        for rid, bases in batch.items():
            if bases:
                changes = range_changes(read_range(rid), rid, bases, read_base, reads)
                total += sum(1 for entry in changes.entries if not entry[2])
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
        self._lock = threading.Lock()  # branches of one pass may transfer at once (branch_workers.py)

    def choose(self, batch: RangeBatch, commit: Commit) -> str:
        self.last_object_count = self.count_objects(batch, commit)
        return PATH_SPARK if self.last_object_count >= self.threshold else PATH_IN_PROCESS

    def __call__(self, batch: RangeBatch, commit: Commit, stats: TransferStats, ref: SyncingRef) -> None:
        path = self.choose(batch, commit)
        with self._lock:
            self.last_choice = path
            self.choices[path] += 1
        stats.note_path(path)
        log.info("transferring %d range(s), %d object(s): %s", len(batch), self.last_object_count, path)
        (self.spark if path == PATH_SPARK else self.in_process)(batch, commit, stats, ref)
