"""Transferring one range: the one implementation the engine's own pool, a Spark task and every other path run.

A range's objects that the destination lacks (or holds with another size or checksum) are copied on a
``TransferPool``; the range file is written only when every object arrived, so a range file at the destination
always means "all of my objects are there". Entries unchanged from the validated base ranges the new range
rewrites are skipped without a look. The result is a small picklable summary (all a Spark task sends back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..graveler.range_id import verify_range_file
from ..graveler.sstable import SSTableError
from ..lakefs import LakeFSError
from ..storage import Blockstore, StorageError, TransferPool
from .copy_plan import plan_range_copies
from .failpoints import failpoint
from .results import TransferStats
from .validation import MAX_REPORTED, metadata_uri, present_entries

__all__ = ["RangeSource", "RangeTransferSummary", "transfer_range"]


class RangeSource(Protocol):
    """Where a range's file and objects are read from (``replication.source.SourceReader``)."""

    def read_metadata(self, kind: str, file_id: str) -> bytes: ...

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]: ...


@dataclass
class RangeTransferSummary:
    """What transferring one range did."""

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
    #: The range itself could not be read or decoded (its objects were not looked at).
    error: str | None = None

    def add_to(self, stats: TransferStats) -> None:
        """Fold this range into a ref's stats."""
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


def transfer_range(
    source: RangeSource,
    destination: Blockstore,
    destination_namespace: str,
    range_id: str,
    commit_id: str,
    pool: TransferPool,
    *,
    base_ranges: Sequence[str] = (),
) -> RangeTransferSummary:
    """Copy one range's missing objects (read at ``commit_id``), then write its range file if all arrived.

    Never raises for a storage or data problem: the summary says what failed (the pool has already retried
    transient errors), and a range with any failure gets no range file, so its commit is not promoted.
    """
    summary = RangeTransferSummary(range_id)
    try:
        data = source.read_metadata("range", range_id)
        copies = plan_range_copies(
            verify_range_file(data, range_id),
            present=present_entries(destination, destination_namespace, base_ranges),
            locate=lambda key, address: source.object_location(commit_id, key, address),
            destination=destination,
            destination_namespace=destination_namespace,
        )
        summary.objects = copies.objects
        summary.unchanged = copies.unchanged
        summary.full_address_count = copies.full_address_count
        summary.full_address_examples = copies.full_address_examples[:MAX_REPORTED]
        result = pool.run(copies.tasks, copies.destination_stats)
        summary.copied, summary.skipped = result.copied, result.skipped
        summary.bytes_copied, summary.retried = result.bytes_copied, result.retries
        summary.checks = dict(result.checks)
        if result.failed:
            summary.failed_count = len(result.failed)
            summary.failed = [f.describe() for f in result.failed[:MAX_REPORTED]]
            return summary
        failpoint("before_range_file")
        destination.write_bytes(metadata_uri(destination_namespace, range_id), data)
        summary.range_written = True
        failpoint("after_range_file")
    except (SSTableError, StorageError, LakeFSError) as exc:
        summary.error = f"range {range_id}: {type(exc).__name__}: {exc}"
    return summary
