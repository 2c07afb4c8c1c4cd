"""What a new range asks of a pass: its entries that are not byte for byte in the validated ranges it rewrites.

When lakeFS inserts one key into a 50,000-entry range it writes a new range whose base, validated earlier, holds
the other 49,999. ``range_changes`` hashes the new file (it must hash to its ID), compares its raw records with
the base's and decodes only those that differ. ``RangeReads`` keeps them with their bytes for the pass's
validation; ``VerifiedRanges`` keeps range files that hashed to their IDs across passes, so the range one pass
writes is the next pass's base without being read or hashed again. Only bases whose validated copies at the
destination are intact are passed, so what is remembered never decides what counts as validated.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..graveler import EntryLocation, SSTableError, VerifiedRange, changed_entries, object_range
from ..storage import StorageError

__all__ = ["PROCESS_VERIFIED_RANGES", "RangeChanges", "RangeReads", "VerifiedRanges", "range_changes"]

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


class VerifiedRanges:
    """Range files that hashed to their IDs (``VerifiedRange``), by ID; the least recently used go first once
    more than ``budget_bytes`` (estimated) would be held. Thread-safe."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._lock = threading.Lock()
        self._ranges: OrderedDict[str, tuple[int, VerifiedRange]] = OrderedDict()
        self._used = 0

    def get(self, range_id: str) -> VerifiedRange | None:
        with self._lock:
            kept = self._ranges.get(range_id)
            if kept is None:
                return None
            self._ranges.move_to_end(range_id)
            return kept[1]

    def keep(self, range_id: str, verified: VerifiedRange) -> None:
        """Remember ``verified``, which hashed to ``range_id``."""
        cost = verified.cost
        if cost > self.budget_bytes:
            return
        with self._lock:
            if range_id in self._ranges:
                self._ranges.move_to_end(range_id)
                return
            while self._ranges and self._used + cost > self.budget_bytes:
                self._used -= self._ranges.popitem(last=False)[1][0]
            self._ranges[range_id] = (cost, verified)
            self._used += cost

    @property
    def used_bytes(self) -> int:
        return self._used


#: The process's own: a long-running ``sync`` loop or server compares each pass's rewrites with what the pass
#: before it wrote. Sized for a few of lakeFS's largest ranges (an 84,000-entry range: an 8.5 MB file, 17 MB of
#: decompressed blocks).
PROCESS_VERIFIED_RANGES = VerifiedRanges(64 << 20)


@dataclass
class _Kept:
    """A range's changes against its bases, the bytes they came from, and the MD5 of those bytes once a
    transfer stored them at the destination."""

    cost: int
    data: bytes
    changes: RangeChanges
    stored_md5: str | None = None


class RangeReads:
    """What one pass read of range files at one destination, kept for the rest of the pass (thread-safe).

    Holds at most ``budget_bytes`` (estimated): what does not fit is not kept, and computed again when asked
    for (correct, only slower). ``forget`` drops a metarange's files once it is done. Bases are looked up in
    ``verified`` (by default a memory of this pass's own; the engine passes ``PROCESS_VERIFIED_RANGES``).
    """

    def __init__(self, budget_bytes: int = 128 << 20, *, verified: VerifiedRanges | None = None) -> None:
        self.budget_bytes = budget_bytes
        self.verified = verified if verified is not None else VerifiedRanges(budget_bytes)
        self._lock = threading.Lock()
        self._changes: dict[tuple[str, tuple[str, ...]], _Kept] = {}
        self._used = 0

    def changes(self, range_id: str, bases: Sequence[str], data: bytes) -> RangeChanges | None:
        """The changes computed from exactly these bytes against these bases, if kept."""
        with self._lock:
            kept = self._changes.get((range_id, tuple(bases)))
        return kept.changes if kept is not None and (kept.data is data or kept.data == data) else None

    def stored(self, range_id: str, bases: Sequence[str]) -> tuple[str, RangeChanges] | None:
        """The MD5 of the bytes a transfer verified and stored for this range, and their changes, if kept: a
        destination that answers with the MD5 of what it holds shows it holds those bytes, without a read."""
        with self._lock:
            kept = self._changes.get((range_id, tuple(bases)))
        if kept is None or kept.stored_md5 is None:
            return None
        return kept.stored_md5, kept.changes

    def keep_changes(self, range_id: str, bases: Sequence[str], data: bytes, changes: RangeChanges) -> None:
        key = (range_id, tuple(bases))
        cost = len(data) + _ENTRY_COST * len(changes.entries)
        with self._lock:
            if key not in self._changes and self._used + cost <= self.budget_bytes:
                self._changes[key] = _Kept(cost, data, changes)
                self._used += cost

    def note_stored(self, range_id: str, bases: Sequence[str], md5: str) -> None:
        """The kept bytes of this range were stored at the destination, and their MD5 is ``md5``."""
        with self._lock:
            if (kept := self._changes.get((range_id, tuple(bases)))) is not None:
                kept.stored_md5 = md5

    def forget(self, range_ids: Iterable[str]) -> None:
        """Drop what is kept of these ranges' changes (``verified`` keeps their blocks as later passes' bases)."""
        ids = set(range_ids)
        with self._lock:
            for key in [k for k in self._changes if k[0] in ids]:
                self._used -= self._changes.pop(key).cost

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
    entry of one of ``base_ranges`` (validated ranges, each remembered by ``reads.verified`` or read with
    ``read_base`` and checked to hash to its ID), decoded; the others are only counted. A base that cannot be
    read or does not hash to its ID adds nothing: its entries are then worked on like any other. Raises
    ``SSTableError`` (including a mismatched ID) for ``data`` itself."""
    if reads is not None and (kept := reads.changes(range_id, base_ranges, data)) is not None:
        return kept
    verified = reads.verified if reads is not None else None
    bases = [b for b in (_base(rid, read_base, verified) for rid in dict.fromkeys(base_ranges)) if b is not None]
    new = object_range(data, range_id, like=bases[0] if bases else None)  # the first base: where a rewrite starts
    entries, unchanged = changed_entries(new.blocks, [b.blocks for b in bases])
    changes = RangeChanges(entries, unchanged)
    if reads is not None:
        reads.verified.keep(range_id, new)  # the base of the next rewrite of this range
        reads.keep_changes(range_id, base_ranges, data, changes)
    return changes


def _base(range_id: str, read: Callable[[str], bytes], verified: VerifiedRanges | None) -> VerifiedRange | None:
    if verified is not None and (kept := verified.get(range_id)) is not None:
        return kept
    try:
        base = object_range(read(range_id), range_id)
    except (SSTableError, StorageError):
        return None
    if verified is not None:
        verified.keep(range_id, base)
    return base
