"""Transferring one range: the one implementation the engine's own pool, a Spark task and every other path run.

The objects the destination lacks (or holds with another size or checksum) are copied on a ``TransferPool``;
the range file is written only when every object arrived, so a range file at the destination means "all my
objects are there". Entries unchanged from the base ranges are skipped undecoded (``range_changes``). The
result is a small picklable summary. In ``transfer.mode: external`` no object is copied (the store's own
replication does it) and the range file promises nothing: validation is what lets a commit be promoted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

from ..graveler import SSTableError
from ..lakefs import LakeFSError
from ..storage import Blockstore, CopyResult, ObjectStat, StorageError, TransferPool
from .aside import aside
from .copy_plan import plan_range_copies
from .failpoints import failpoint
from .range_changes import RangeReads, range_changes
from .results import TransferStats
from .validation import MAX_REPORTED, base_reader, metadata_uri

__all__ = ["RangeSource", "RangeTransferSummary", "content_md5", "put_metadata_file", "transfer_range"]

#: Range files this large have their MD5 worked out on a thread of its own (``_md5_of``).
_HASH_ASIDE_BYTES = 1 << 20


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
    #: Objects left to the store's replication (``copy_objects=False``): neither copied nor looked at here.
    awaited: int = 0
    range_written: bool = False
    #: The range file was already at the destination, byte for byte (external mode only looks).
    range_present: bool = False
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
        stats.objects_awaited += self.awaited
        stats.metadata_files_present += self.range_present


def put_metadata_file(
    store: Blockstore, namespace: str, file_id: str, data: bytes, *, keep_present: bool, md5: str | None = None
) -> bool:
    """Write a range or metarange file to ``<namespace>/_lakefs/<id>``; returns whether it was written. With
    ``keep_present`` (external mode) a file already there with these bytes is left alone: the store's
    replication delivered it. A different or partial one is overwritten, as copy mode always does. ``md5``
    (of ``data``, which hashed to ``file_id``) lets the store refuse bytes damaged on their way in."""
    uri = metadata_uri(namespace, file_id)
    if keep_present:
        stat = store.stat(uri)
        if stat is not None and stat.size == len(data) and store.read_bytes(uri) == data:
            return False
    store.write_bytes(uri, data, md5=md5)
    return True


def content_md5(store: Blockstore, data: bytes) -> str | None:
    """The hex MD5 of ``data`` to write it with, when ``store`` answers with the MD5 of what it holds (it then
    refuses bytes damaged on their way in, and validation compares its ETag instead of reading them back)."""
    return _md5_of(data).result() if store.answers_md5(len(data)) else None


def _md5_of(data: bytes) -> Future[str]:
    """The hex MD5 of ``data``; of a large range file, worked out beside the caller: hashlib lets go of the GIL,
    so it overlaps the range's hash check and comparison (C loops holding it) on another core."""
    if len(data) < _HASH_ASIDE_BYTES:
        done: Future[str] = Future()
        done.set_result(hashlib.md5(data, usedforsecurity=False).hexdigest())
        return done
    return aside(lambda: hashlib.md5(data, usedforsecurity=False).hexdigest(), name="range-md5")


def transfer_range(
    source: RangeSource,
    destination: Blockstore,
    destination_namespace: str,
    range_id: str,
    commit_id: str,
    pool: TransferPool,
    *,
    base_ranges: Sequence[str] = (),
    copy_objects: bool = True,
    reads: RangeReads | None = None,
    on_result: Callable[[CopyResult], None] | None = None,
    present: Mapping[str, ObjectStat] | None = None,
) -> RangeTransferSummary:
    """Copy one range's missing objects (read at ``commit_id``), then write its range file if all arrived;
    without ``copy_objects`` only count the objects awaited from the store's replication and put the range file.

    Never raises for a storage or data problem: the summary says what failed (the pool has already retried
    transient errors), and a range with any failure gets no range file, so its commit is not promoted.
    ``reads`` (the engine's, in process) keeps the comparison with ``base_ranges`` for the pass's validation;
    ``on_result`` hears each of this range's objects that arrived (the engine's progress of its ref);
    ``present``: objects the engine's copy ahead stored already (``plan_range_copies``).
    """
    summary = RangeTransferSummary(range_id)
    try:
        data = source.read_metadata("range", range_id)
        # only a store that answers with the MD5 of what it stored can use it (to refuse damaged bytes, and to
        # spare validation the read-back)
        md5 = _md5_of(data) if destination.answers_md5(len(data)) else None
        changes = range_changes(data, range_id, base_ranges, base_reader(destination, destination_namespace), reads)
        copies = plan_range_copies(
            changes,
            locate=lambda key, address: source.object_location(commit_id, key, address),
            destination=destination,
            destination_namespace=destination_namespace,
            copy_objects=copy_objects,
            present=present,
        )
        summary.objects = copies.objects
        summary.awaited = copies.awaited
        summary.unchanged = copies.unchanged
        summary.full_address_count = copies.full_address_count
        summary.full_address_examples = copies.full_address_examples[:MAX_REPORTED]
        result = pool.run(copies.tasks, copies.destination_stats, on_result=on_result)
        summary.copied, summary.skipped = result.copied, result.skipped
        summary.bytes_copied, summary.retried = result.bytes_copied, result.retries
        summary.checks = dict(result.checks)
        if result.failed:
            summary.failed_count = len(result.failed)
            summary.failed = [f.describe() for f in result.failed[:MAX_REPORTED]]
            return summary
        failpoint("before_range_file")
        digest = None if md5 is None else md5.result()
        written = put_metadata_file(
            destination, destination_namespace, range_id, data, keep_present=not copy_objects, md5=digest
        )
        summary.range_written, summary.range_present = written, not written
        if reads is not None and digest is not None:
            reads.note_stored(range_id, base_ranges, digest)
        failpoint("after_range_file")
    except (SSTableError, StorageError, LakeFSError) as exc:
        summary.error = f"range {range_id}: {type(exc).__name__}: {exc}"
    return summary
