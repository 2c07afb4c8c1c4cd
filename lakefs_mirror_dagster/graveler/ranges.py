"""Iterate the records of range, metarange and refs-dump files as typed values.

:func:`iter_entry_locations` is the replicator's hot path: one fused loop over each data block that
walks the block entries, the value envelope and the protobuf fields it needs (address, address type,
size) without building intermediate objects. :func:`iter_entries` is the complete, simpler decoder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from .addresses import address_is_full
from .records import (
    BranchData,
    CommitData,
    Entry,
    RangeRef,
    RecordError,
    TagData,
    decode_branch_data,
    decode_commit_data,
    decode_entry,
    decode_range_ref,
    decode_tag_data,
    split_value,
)
from .sstable import KIND_SET, SSTable, SSTableError
from .varint import VarintError, decode_uvarint

__all__ = [
    "FILE_TYPE_METARANGES",
    "FILE_TYPE_RANGES",
    "file_type",
    "iter_branches",
    "iter_commits",
    "iter_entries",
    "iter_entry_locations",
    "iter_range_refs",
    "iter_tags",
]

FILE_TYPE_RANGES = "ranges"
FILE_TYPE_METARANGES = "metaranges"
_INT64_SIGN = 1 << 63
_UINT64_RANGE = 1 << 64
SET_TRAILER = bytes([KIND_SET]) + bytes(7)

T = TypeVar("T")


def file_type(sst: SSTable) -> str:
    """``ranges`` or ``metaranges`` (the user property lakeFS sets); anything else is refused."""
    kind = sst.user_properties.get("type")
    if kind not in (FILE_TYPE_RANGES, FILE_TYPE_METARANGES):
        raise SSTableError(f"not a lakeFS range or metarange: user property type={kind!r}")
    return kind


def _require_type(sst: SSTable, expected: str) -> None:
    kind = file_type(sst)
    if kind != expected:
        raise SSTableError(f"expected a file of type {expected!r}, got {kind!r}")


def _require_entity(sst: SSTable, entity: str | None) -> None:
    _require_type(sst, FILE_TYPE_RANGES)
    found = sst.user_properties.get("entity")
    if found != entity:
        want = "an object range" if entity is None else f"a {entity} dump range"
        raise SSTableError(f"expected {want}, but the file's entity property is {found!r}")


def iter_entries(sst: SSTable) -> Iterator[tuple[bytes, bytes, Entry]]:
    """(key, identity, entry) for every object of a range, fully decoded."""
    _require_entity(sst, None)
    for key, value in sst.iter_records():
        identity, data = split_value(value)
        try:
            entry = decode_entry(data)
        except RecordError as exc:
            raise RecordError(f"record {key!r}: {exc}") from None
        yield key, identity, entry


def iter_range_refs(sst: SSTable) -> Iterator[RangeRef]:
    """The ranges a metarange lists, in key order."""
    _require_type(sst, FILE_TYPE_METARANGES)
    for key, value in sst.iter_records():
        yield decode_range_ref(key, value)


def _iter_dump(sst: SSTable, entity: str, decode: Callable[[bytes], T]) -> Iterator[tuple[bytes, bytes, T]]:
    _require_entity(sst, entity)
    for key, value in sst.iter_records():
        identity, data = split_value(value)
        try:
            yield key, identity, decode(data)
        except RecordError as exc:
            raise RecordError(f"{entity} record {key!r}: {exc}") from None


def iter_commits(sst: SSTable) -> Iterator[tuple[bytes, bytes, CommitData]]:
    """(key = commit ID, identity = commit ID, commit) from a commits-dump range."""
    return _iter_dump(sst, "commit", decode_commit_data)


def iter_branches(sst: SSTable) -> Iterator[tuple[bytes, bytes, BranchData]]:
    """(key = branch name, identity = commit ID, branch) from a branches-dump range."""
    return _iter_dump(sst, "branch", decode_branch_data)


def iter_tags(sst: SSTable) -> Iterator[tuple[bytes, bytes, TagData]]:
    """(key = tag name, identity = commit ID, tag) from a tags-dump range."""
    return _iter_dump(sst, "tag", decode_tag_data)


def iter_entry_locations(sst: SSTable) -> Iterator[tuple[bytes, str, bool, int, str]]:
    """(key, address, is_full, size, etag) of every object of a range: what the replicator copies and checks.

    Same results as :func:`iter_entries` restricted to these fields, several times faster.
    """
    _require_entity(sst, None)
    for block_no, block in enumerate(sst.iter_data_blocks()):
        try:
            yield from _block_locations(block)
        except (IndexError, VarintError) as exc:
            raise SSTableError(f"data block {block_no}: corrupt record ({exc})") from None


def _block_locations(block: bytes) -> Iterator[tuple[bytes, str, bool, int, str]]:
    """The fused loop. Every varint has an inline 1- (and 2-) byte path; longer ones call decode_uvarint.

    Go marshals fields in number order, so address, last_modified, size, e_tag, metadata and
    address_type are read in that order first; anything left (content_type, unknown or out-of-order
    fields) goes through the generic loop, which keeps protobuf's last-value-wins semantics.
    """
    n = len(block)
    if n < 8:
        raise SSTableError(f"data block of {n} bytes is too short")
    end = n - 4 - 4 * int.from_bytes(block[n - 4 :], "little")
    if end < 0:
        raise SSTableError("data block restart count exceeds the block")
    pos = 0
    ukey = b""  # previous user key
    ikey_prev = b""  # previous internal key, only kept when a shared prefix reaches into the trailer
    while pos < end:
        # --- block entry header: shared, unshared, value length
        shared = block[pos]
        if shared < 0x80:
            pos += 1
        else:
            shared, pos = decode_uvarint(block, pos)
        unshared = block[pos]
        if unshared < 0x80:
            pos += 1
        else:
            unshared, pos = decode_uvarint(block, pos)
        vlen = block[pos]
        if vlen < 0x80:
            pos += 1
        elif block[pos + 1] < 0x80:
            vlen = (vlen & 0x7F) | (block[pos + 1] << 7)
            pos += 2
        else:
            vlen, pos = decode_uvarint(block, pos)
        kend = pos + unshared
        vend = kend + vlen
        if vend > end:
            raise SSTableError(f"corrupt block entry at offset {pos}")
        # --- user key: the shared prefix plus the unshared bytes, minus the 8-byte trailer
        if shared <= len(ukey) and unshared >= 8:
            ukey = ukey[:shared] + block[pos : kend - 8] if shared else block[pos : kend - 8]
            if block[kend - 8] != KIND_SET:
                raise SSTableError(f"record {ukey!r} is not a SET record")
        else:  # shared prefix reaches into the previous trailer: rebuild the full internal key
            ikey_prev = ukey + SET_TRAILER
            if shared > len(ikey_prev) or shared + unshared < 8:
                raise SSTableError(f"corrupt block entry at offset {pos}")
            ikey = ikey_prev[:shared] + block[pos:kend]
            if ikey[-8] != KIND_SET:
                raise SSTableError(f"record {ikey[:-8]!r} is not a SET record")
            ukey = ikey[:-8]
        # --- value envelope: zig-zag identity length, identity, zig-zag data length
        p = kend
        b = block[p]
        if b < 0x80:
            p += 1
        else:
            b, p = decode_uvarint(block, p)
        p += b >> 1
        dlen = block[p]
        if dlen < 0x80:
            p += 1
        elif block[p + 1] < 0x80:
            dlen = (dlen & 0x7F) | (block[p + 1] << 7)
            p += 2
        else:
            dlen, p = decode_uvarint(block, p)
        if b & 1 or dlen & 1:
            raise SSTableError(f"record {ukey!r}: negative length in value")
        dend = p + (dlen >> 1)
        if dend > vend:
            raise SSTableError(f"record {ukey!r}: value data overruns the record")
        # --- catalog.Entry, canonical field order first
        address = b""
        size = 0
        etag = b""
        address_type = 0
        if p < dend and block[p] == 0x0A:  # 1 address
            ln = block[p + 1]
            p += 2
            if ln >= 0x80:
                ln, p = decode_uvarint(block, p - 1)
            address = block[p : p + ln]
            p += ln
        if p < dend and block[p] == 0x12:  # 2 last_modified: skip
            ln = block[p + 1]
            if ln < 0x80:
                p += 2 + ln
            else:
                ln, p = decode_uvarint(block, p + 1)
                p += ln
        if p < dend and block[p] == 0x18:  # 3 size, unrolled up to 5 bytes (sizes below 32 GiB)
            size = block[p + 1]
            if size < 0x80:
                p += 2
            else:
                c = block[p + 2]
                size = (size & 0x7F) | (c & 0x7F) << 7
                if c < 0x80:
                    p += 3
                else:
                    c = block[p + 3]
                    size |= (c & 0x7F) << 14
                    if c < 0x80:
                        p += 4
                    else:
                        c = block[p + 4]
                        size |= (c & 0x7F) << 21
                        if c < 0x80:
                            p += 5
                        else:
                            c = block[p + 5]
                            size |= c << 28
                            p += 6
                            if c >= 0x80:
                                size, p = decode_uvarint(block, p - 5)
                                if size >= _INT64_SIGN:
                                    size -= _UINT64_RANGE
        if p < dend and block[p] == 0x22:  # 4 e_tag
            ln = block[p + 1]
            p += 2
            if ln >= 0x80:
                ln, p = decode_uvarint(block, p - 1)
            etag = block[p : p + ln]
            p += ln
        while p < dend and block[p] == 0x2A:  # 5 metadata entries: skip
            ln = block[p + 1]
            if ln < 0x80:
                p += 2 + ln
            else:
                ln, p = decode_uvarint(block, p + 1)
                p += ln
        if p < dend and block[p] == 0x30:  # 6 address_type
            address_type = block[p + 1]
            p += 2
            if address_type >= 0x80:
                address_type, p = decode_uvarint(block, p - 1)
        if p < dend and block[p] == 0x3A:  # 7 content_type: skip
            ln = block[p + 1]
            if ln < 0x80:
                p += 2 + ln
            else:
                ln, p = decode_uvarint(block, p + 1)
                p += ln
        while p < dend:  # unknown and out-of-order fields
            tag = block[p]
            if tag == 0x0A:
                ln, p = decode_uvarint(block, p + 1)
                address = block[p : p + ln]
                p += ln
            elif tag == 0x18:
                v, p = decode_uvarint(block, p + 1)
                size = v - _UINT64_RANGE if v >= _INT64_SIGN else v
            elif tag == 0x22:
                ln, p = decode_uvarint(block, p + 1)
                etag = block[p : p + ln]
                p += ln
            elif tag == 0x30:
                address_type, p = decode_uvarint(block, p + 1)
            else:
                p = _skip_field(block, p)
        if p != dend:
            raise SSTableError(f"record {ukey!r}: entry protobuf overruns its length")
        try:
            addr = address.decode("utf-8")
            tag_text = etag.decode("utf-8")
        except UnicodeDecodeError:
            raise SSTableError(f"record {ukey!r}: address or ETag is not valid UTF-8") from None
        if address_type == 1:
            yield ukey, addr, False, size, tag_text
        elif address_type == 2:
            yield ukey, addr, True, size, tag_text
        else:
            try:
                full = address_is_full(addr, address_type)
            except ValueError as exc:
                raise SSTableError(f"record {ukey!r}: {exc}") from None
            yield ukey, addr, full, size, tag_text
        pos = vend


def _skip_field(buf: bytes, p: int) -> int:
    """Skip one protobuf field (tag at ``p``) that the fast path does not need."""
    tag, p = decode_uvarint(buf, p)
    wire = tag & 7
    if tag >> 3 == 0:
        raise SSTableError("protobuf field number 0")
    if wire == 0:
        _, p = decode_uvarint(buf, p)
        return p
    if wire == 2:
        ln, p = decode_uvarint(buf, p)
        return p + ln
    if wire == 1:
        return p + 8
    if wire == 5:
        return p + 4
    raise SSTableError(f"unsupported protobuf wire type {wire}")
