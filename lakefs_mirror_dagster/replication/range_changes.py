"""What a new range asks of a pass: its entries that are not byte for byte in the validated ranges it rewrites.

When lakeFS inserts one key into a 50,000-entry range it writes a new range; the range it replaces (its base,
validated earlier and still intact at the destination) holds the other 49,999 entries already checked there.
``range_changes`` hashes the new range file (it must hash to its ID), compares its raw records with the base's
and decodes only the records that differ. The transfer copies those entries' objects, validation checks them.

Both run in one pass, on the same files: a ``RangeReads`` keeps what the transfer read (each base's data blocks,
each range's changes with the bytes they came from) so validation, finding the same bytes at the destination,
neither hashes nor compares them again. It is bounded and the engine drops a metarange's files when done.
Spark tasks pass none: each task computes its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..graveler.ranges import EntryLocation, changed_entries, object_blocks
from ..graveler.sstable import SSTableError
from ..storage import StorageError

__all__ = ["RangeChanges", "RangeReads", "range_changes"]

#: Bytes of a kept base's data block beyond its contents (the bytes object, the list slot).
_BLOCK_OVERHEAD = 48
#: Bytes of one decoded entry kept in memory (tuple, key, address and ETag objects).
_ENTRY_COST = 400


@dataclass(frozen=True)
class RangeChanges:
    """A range's entries that need a copy or a look (decoded), and how many are unchanged from its bases."""

    entries: list[EntryLocation]
    unchanged: int = 0

    @property
    def objects(self) -> int:
        return len(self.entries) + self.unchanged


class RangeReads:
    """What one pass read of range files at one destination, kept for the rest of the pass (thread-safe).

    Holds at most ``budget_bytes`` (estimated): what does not fit is not kept, and computed again when asked
    for (correct, only slower). ``forget`` drops a metarange's files once it is done.
    """

    def __init__(self, budget_bytes: int = 128 << 20) -> None:
        self.budget_bytes = budget_bytes
        self._lock = threading.Lock()
        self._bases: dict[str, tuple[int, list[bytes]]] = {}
        self._changes: dict[tuple[str, tuple[str, ...]], tuple[int, bytes, RangeChanges]] = {}
        self._used = 0

    def base(self, range_id: str) -> list[bytes] | None:
        """A base's verified data blocks, if kept."""
        with self._lock:
            kept = self._bases.get(range_id)
        return None if kept is None else kept[1]

    def keep_base(self, range_id: str, blocks: list[bytes]) -> None:
        cost = sum(map(len, blocks)) + _BLOCK_OVERHEAD * len(blocks)
        with self._lock:
            if range_id not in self._bases and self._used + cost <= self.budget_bytes:
                self._bases[range_id] = (cost, blocks)
                self._used += cost

    def changes(self, range_id: str, bases: Sequence[str], data: bytes) -> RangeChanges | None:
        """The changes computed from exactly these bytes against these bases, if kept."""
        with self._lock:
            kept = self._changes.get((range_id, tuple(bases)))
        return kept[2] if kept is not None and (kept[1] is data or kept[1] == data) else None

    def keep_changes(self, range_id: str, bases: Sequence[str], data: bytes, changes: RangeChanges) -> None:
        key = (range_id, tuple(bases))
        cost = len(data) + _ENTRY_COST * len(changes.entries)
        with self._lock:
            if key not in self._changes and self._used + cost <= self.budget_bytes:
                self._changes[key] = (cost, data, changes)
                self._used += cost

    def forget(self, range_ids: Iterable[str]) -> None:
        """Drop what is kept of these ranges, as new ranges and as bases."""
        ids = set(range_ids)
        with self._lock:
            for rid in ids & self._bases.keys():
                self._used -= self._bases.pop(rid)[0]
            for key in [k for k in self._changes if k[0] in ids]:
                self._used -= self._changes.pop(key)[0]

    @property
    def used_bytes(self) -> int:
        return self._used


def range_changes(
    data: bytes,
    range_id: str,
    base_ranges: Sequence[str],
    read_base: Callable[[str], bytes],
    reads: RangeReads | None = None,
) -> RangeChanges:
    """The entries of range file ``data`` (checked to hash to ``range_id``) that are not byte-identical to an
    entry of one of ``base_ranges`` (validated ranges, each read with ``read_base`` and checked to hash to its
    ID), decoded; the others are only counted. A base that cannot be read or does not hash to its ID adds
    nothing: its entries are then worked on like any other. Raises ``SSTableError`` (including a mismatched
    ID) for ``data`` itself."""
    if reads is not None and (kept := reads.changes(range_id, base_ranges, data)) is not None:
        return kept
    bases = [b for b in (_base_blocks(rid, read_base, reads) for rid in dict.fromkeys(base_ranges)) if b]
    entries, unchanged = changed_entries(object_blocks(data, range_id), bases)
    changes = RangeChanges(entries, unchanged)
    if reads is not None:
        reads.keep_changes(range_id, base_ranges, data, changes)
    return changes


def _base_blocks(range_id: str, read: Callable[[str], bytes], reads: RangeReads | None) -> list[bytes]:
    if reads is not None and (kept := reads.base(range_id)) is not None:
        return kept
    try:
        blocks = object_blocks(read(range_id), range_id)
    except (SSTableError, StorageError):
        return []
    if reads is not None:
        reads.keep_base(range_id, blocks)
    return blocks
