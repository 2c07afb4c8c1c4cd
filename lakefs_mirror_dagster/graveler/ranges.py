"""Iterate the records of range, metarange and refs-dump files as typed values.

:func:`entry_location` is the replicator's hot path: one loop over a record's value envelope and the
protobuf fields it needs (address, address type, size, ETag) without building intermediate objects.
:func:`iter_entries` is the complete, simpler decoder. :func:`changed_entries` compares a range with the
ranges it rewrites by raw record bytes, so only records that differ are decoded at all.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from .addresses import address_is_full
from .range_id import VerifiedRange, verify_range
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
from .sstable import SSTable, SSTableError, block_list_records
from .varint import VarintError, decode_uvarint

try:  # compiled where a C compiler is found, like sstable's block walk
    from ._native import changed_records as _native_changed_records
except ImportError:  # pragma: no cover
    _native_changed_records = None  # type: ignore[assignment]

__all__ = [
    "FILE_TYPE_METARANGES",
    "FILE_TYPE_RANGES",
    "EntryLocation",
    "changed_entries",
    "entry_location",
    "file_type",
    "iter_branches",
    "iter_commits",
    "iter_entries",
    "iter_entry_locations",
    "iter_range_refs",
    "iter_tags",
    "object_blocks",
    "object_range",
]

FILE_TYPE_RANGES = "ranges"
FILE_TYPE_METARANGES = "metaranges"
_INT64_SIGN = 1 << 63
_UINT64_RANGE = 1 << 64

T = TypeVar("T")

#: (key, address, is_full, size, etag): what the replicator needs of one object entry of a range.
EntryLocation = tuple[bytes, str, bool, int, str]


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


def iter_entry_locations(sst: SSTable) -> Iterator[EntryLocation]:
    """(key, address, is_full, size, etag) of every object of a range: what the replicator copies and checks.

    Same results as :func:`iter_entries` restricted to these fields, several times faster.
    """
    _require_entity(sst, None)
    for key, value in sst.iter_records():
        yield entry_location(key, value)


def object_blocks(data: bytes, range_id: str) -> list[bytes]:
    """The decompressed data blocks of an object range file, once it hashes to ``range_id``."""
    return object_range(data, range_id).blocks


def object_range(data: bytes, range_id: str, *, like: VerifiedRange | None = None) -> VerifiedRange:
    """An object range file, once it hashes to ``range_id`` (checked as a rewrite of ``like``, see
    :func:`verify_range`)."""
    verified = verify_range(data, range_id, like=like)
    _require_entity(verified.sst, None)
    return verified


def changed_entries(blocks: list[bytes], bases: Sequence[list[bytes]]) -> tuple[list[EntryLocation], int]:
    """The entries of the range whose data blocks are ``blocks`` that no base (the data blocks of another range)
    holds byte for byte (same key, same raw value), decoded, and how many were unchanged. Raw bytes compare
    without decoding: a 50,000-entry range lakeFS rewrote to insert one key costs one decoded entry, and the
    C walk (where built) makes no Python object for an unchanged record. Byte-identical is stricter than equal
    locations (a new ``last_modified`` or metadata counts as a change), so nothing is ever taken as unchanged
    that a decoder would call changed."""
    changed, unchanged = _changed_records(blocks, list(bases))
    return [entry_location(key, value) for key, value in changed], unchanged


def _python_changed_records(blocks: list[bytes], bases: list[list[bytes]]) -> tuple[list[tuple[bytes, bytes]], int]:
    """The reference for ``_native.changed_records``: records of ``blocks`` no base holds byte for byte. The C
    merge walks keys in order, so keys out of order (in ``blocks`` or a base) are refused here too."""
    base_maps = [dict(_in_order(block_list_records(base))) for base in bases]
    changed: list[tuple[bytes, bytes]] = []
    unchanged = 0
    for key, value in _in_order(block_list_records(blocks)):
        if any(base.get(key) == value for base in base_maps):
            unchanged += 1
        else:
            changed.append((key, value))
    return changed, unchanged


def _in_order(records: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``records``, refused unless each key is greater than the one before (as lakeFS writes a range)."""
    for (before, _), (key, _) in itertools.pairwise(records):
        if key <= before:
            raise SSTableError(f"key {key!r} not greater than the key before it ({before!r})")
    return records


def _changed_records(blocks: list[bytes], bases: list[list[bytes]]) -> tuple[list[tuple[bytes, bytes]], int]:
    if _native_changed_records is None:
        return _python_changed_records(blocks, bases)
    try:
        return _native_changed_records(blocks, bases)
    except ValueError as exc:  # the C walk names the block in its message
        raise SSTableError(str(exc)) from None


def entry_location(key: bytes, value: bytes) -> EntryLocation:
    """The location fields of one raw range record (key, graveler value), decoded without building objects.

    Every varint has an inline 1- (and 2-) byte path; longer ones call decode_uvarint. Go marshals fields in
    number order, so address, last_modified, size, e_tag, metadata and address_type are read in that order
    first; anything left (content_type, unknown or out-of-order fields) goes through the generic loop, which
    keeps protobuf's last-value-wins semantics.
    """
    try:
        n = len(value)
        # --- value envelope: zig-zag identity length, identity, zig-zag data length
        p = 0
        b = value[p]
        if b < 0x80:
            p += 1
        else:
            b, p = decode_uvarint(value, p)
        p += b >> 1
        dlen = value[p]
        if dlen < 0x80:
            p += 1
        elif value[p + 1] < 0x80:
            dlen = (dlen & 0x7F) | (value[p + 1] << 7)
            p += 2
        else:
            dlen, p = decode_uvarint(value, p)
        if b & 1 or dlen & 1:
            raise SSTableError(f"record {key!r}: negative length in value")
        dend = p + (dlen >> 1)
        if dend > n:
            raise SSTableError(f"record {key!r}: value data overruns the record")
        # --- catalog.Entry, canonical field order first
        address = b""
        size = 0
        etag = b""
        address_type = 0
        if p < dend and value[p] == 0x0A:  # 1 address
            ln = value[p + 1]
            p += 2
            if ln >= 0x80:
                ln, p = decode_uvarint(value, p - 1)
            address = value[p : p + ln]
            p += ln
        if p < dend and value[p] == 0x12:  # 2 last_modified: skip
            ln = value[p + 1]
            if ln < 0x80:
                p += 2 + ln
            else:
                ln, p = decode_uvarint(value, p + 1)
                p += ln
        if p < dend and value[p] == 0x18:  # 3 size, unrolled up to 5 bytes (sizes below 32 GiB)
            size = value[p + 1]
            if size < 0x80:
                p += 2
            else:
                c = value[p + 2]
                size = (size & 0x7F) | (c & 0x7F) << 7
                if c < 0x80:
                    p += 3
                else:
                    c = value[p + 3]
                    size |= (c & 0x7F) << 14
                    if c < 0x80:
                        p += 4
                    else:
                        c = value[p + 4]
                        size |= (c & 0x7F) << 21
                        if c < 0x80:
                            p += 5
                        else:
                            c = value[p + 5]
                            size |= c << 28
                            p += 6
                            if c >= 0x80:
                                size, p = decode_uvarint(value, p - 5)
                                if size >= _INT64_SIGN:
                                    size -= _UINT64_RANGE
        if p < dend and value[p] == 0x22:  # 4 e_tag
            ln = value[p + 1]
            p += 2
            if ln >= 0x80:
                ln, p = decode_uvarint(value, p - 1)
            etag = value[p : p + ln]
            p += ln
        while p < dend and value[p] == 0x2A:  # 5 metadata entries: skip
            ln = value[p + 1]
            if ln < 0x80:
                p += 2 + ln
            else:
                ln, p = decode_uvarint(value, p + 1)
                p += ln
        if p < dend and value[p] == 0x30:  # 6 address_type
            address_type = value[p + 1]
            p += 2
            if address_type >= 0x80:
                address_type, p = decode_uvarint(value, p - 1)
        if p < dend and value[p] == 0x3A:  # 7 content_type: skip
            ln = value[p + 1]
            if ln < 0x80:
                p += 2 + ln
            else:
                ln, p = decode_uvarint(value, p + 1)
                p += ln
        while p < dend:  # unknown and out-of-order fields
            tag = value[p]
            if tag == 0x0A:
                ln, p = decode_uvarint(value, p + 1)
                address = value[p : p + ln]
                p += ln
            elif tag == 0x18:
                v, p = decode_uvarint(value, p + 1)
                size = v - _UINT64_RANGE if v >= _INT64_SIGN else v
            elif tag == 0x22:
                ln, p = decode_uvarint(value, p + 1)
                etag = value[p : p + ln]
                p += ln
            elif tag == 0x30:
                address_type, p = decode_uvarint(value, p + 1)
            else:
                p = _skip_field(value, p)
        if p != dend:
            raise SSTableError(f"record {key!r}: entry protobuf overruns its length")
        try:
            addr = address.decode("utf-8")
            tag_text = etag.decode("utf-8")
        except UnicodeDecodeError:
            raise SSTableError(f"record {key!r}: address or ETag is not valid UTF-8") from None
        if address_type == 1:
            return key, addr, False, size, tag_text
        if address_type == 2:
            return key, addr, True, size, tag_text
        try:
            return key, addr, address_is_full(addr, address_type), size, tag_text
        except ValueError as exc:
            raise SSTableError(f"record {key!r}: {exc}") from None
    except (IndexError, VarintError) as exc:
        raise SSTableError(f"record {key!r}: corrupt value ({exc})") from None


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
