"""A metarange file checked against its ID and decoded block by block, reusing the metarange it follows.

A history where each commit adds a range (an append-only log: ``log/000001``, ``log/000002``, …) makes commit
``i``'s metarange list ``i`` ranges. Decoding every one of them from scratch costs the whole history's square.
lakeFS's writer cuts a metarange's data blocks the same way for the same records, so commit ``i``'s file starts
with commit ``i - 1``'s blocks, byte for byte. ``decode_metarange`` given the metarange decoded before (``like``)
takes those blocks' ranges from it and decodes only the blocks after them. The SHA-256 check resumes the same way
(``verify_range``). ``Metarange.changed_from`` then names what the file lists that ``like`` does not, without
looking at the blocks the two share.
"""

from __future__ import annotations

import bisect
import itertools

from .range_id import VerifiedRange, verify_range
from .ranges import FILE_TYPE_METARANGES, file_type
from .records import RangeRef, decode_range_ref
from .sstable import SSTableError, block_records

__all__ = ["Metarange", "decode_metarange"]


class Metarange:
    """A verified metarange: its file (``verified``) and the ranges each of its data blocks lists."""

    __slots__ = ("block_refs", "refs", "verified")

    def __init__(self, verified: VerifiedRange, block_refs: list[list[RangeRef]]) -> None:
        self.verified = verified
        self.block_refs = block_refs
        #: Every range it lists, in key order.
        self.refs: list[RangeRef] = list(itertools.chain.from_iterable(block_refs))

    def overlapping(self, ref: RangeRef) -> list[RangeRef]:
        """The ranges listed here whose key spans overlap ``ref``'s, found by bisection: a metarange lists its
        ranges by max key, and lakeFS's ranges do not overlap each other."""
        refs = self.refs
        i = bisect.bisect_left(refs, ref.min_key, key=_max_key)
        found = []
        while i < len(refs) and refs[i].min_key <= ref.max_key:
            found.append(refs[i])
            i += 1
        return found

    def shared_blocks(self, other: Metarange) -> int:
        """How many leading data blocks this file and ``other`` hold byte for byte."""
        shared = 0
        for mine, theirs in zip(self.verified.blocks, other.verified.blocks, strict=False):
            if mine is not theirs and mine != theirs:
                break
            shared += 1
        return shared

    def changed_from(self, other: Metarange) -> list[RangeRef]:
        """The ranges this metarange lists that ``other`` does not, in key order. The blocks both start with list
        the same ranges, and a range is listed once per file, so only the blocks after them are compared."""
        shared = self.shared_blocks(other)
        theirs = {r.range_id for block in other.block_refs[shared:] for r in block}
        return [r for block in self.block_refs[shared:] for r in block if r.range_id not in theirs]


def _max_key(ref: RangeRef) -> bytes:
    return ref.max_key


def decode_metarange(data: bytes, metarange_id: str, *, like: Metarange | None = None) -> Metarange:
    """Check ``data`` hashes to ``metarange_id`` and is a metarange, and decode the ranges it lists. The data
    blocks it shares with ``like`` (a metarange decoded before, typically its commit's parent's) are neither
    hashed nor decoded again. Raises ``SSTableError`` (``RecordError`` for a record that does not decode)."""
    verified = verify_range(data, metarange_id, like=like.verified if like is not None else None)
    if file_type(verified.sst) != FILE_TYPE_METARANGES:
        raise SSTableError(f"expected a file of type {FILE_TYPE_METARANGES!r}, got {file_type(verified.sst)!r}")
    block_refs: list[list[RangeRef]] = []
    reused = like.verified.blocks if like is not None else []
    for index, block in enumerate(verified.blocks):
        if index < len(reused) and reused[index] is block:  # taken from ``like`` by ``verify_range``
            assert like is not None
            block_refs.append(like.block_refs[index])
            continue
        block_refs.append([decode_range_ref(key, value) for key, value in block_records(block, index)])
    return Metarange(verified, block_refs)
