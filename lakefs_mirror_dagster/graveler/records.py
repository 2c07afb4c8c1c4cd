"""Decode the values lakeFS stores in range, metarange and refs-dump sstables.

Every value is ``varint(len(identity)) identity varint(len(data)) data`` (Go zig-zag varints), with
``data`` a protobuf message that depends on the file: ``catalog.Entry`` in ranges,
``committed.RangeData`` in metaranges, ``CommitData``/``BranchData``/``TagData`` in refs dumps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from .addresses import AddressType, address_is_full
from .errors import ProtoError, RecordError, VarintError
from .ident import commit_id, entry_identity, entry_identity_legacy
from .protowire import (
    as_bool,
    as_bytes,
    as_int32,
    as_int64,
    as_str,
    decode_string_map_entry,
    decode_timestamp,
    iter_fields,
)
from .varint import decode_uvarint, encode_varint, zigzag_decode

__all__ = [
    "MAX_VALUE_COMPONENT",
    "BranchData",
    "CommitData",
    "Entry",
    "RangeRef",
    "RecordError",
    "TagData",
    "decode_branch_data",
    "decode_commit_data",
    "decode_entry",
    "decode_range_ref",
    "decode_tag_data",
    "encode_value",
    "split_value",
]

# pkg/graveler/committed/value.go: a component longer than this is refused as corrupt.
MAX_VALUE_COMPONENT = 640 << 16
_INT64_SIGN = 1 << 63
_UINT64_RANGE = 1 << 64


def _timestamp(seconds: int, nanos: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC) + dt.timedelta(microseconds=nanos // 1000)


def split_value(value: bytes) -> tuple[bytes, bytes]:
    """(identity, data) of a graveler value; trailing bytes are ignored as lakeFS does."""
    n = len(value)
    try:
        u = value[0]
        id_start = 1
        if u >= 0x80:
            u, id_start = decode_uvarint(value, 0)
        id_end = id_start + (u >> 1)
        if u & 1 or (u >> 1) > MAX_VALUE_COMPONENT or id_end > n:
            raise RecordError(f"value identity length {zigzag_decode(u)} is invalid for a {n}-byte value")
        u = value[id_end]
        data_start = id_end + 1
        if u >= 0x80:
            u, data_start = decode_uvarint(value, id_end)
        data_end = data_start + (u >> 1)
        if u & 1 or (u >> 1) > MAX_VALUE_COMPONENT or data_end > n:
            raise RecordError(f"value data length {zigzag_decode(u)} is invalid for a {n}-byte value")
        return value[id_start:id_end], value[data_start:data_end]
    except IndexError:
        raise RecordError(f"value of {n} bytes is truncated") from None
    except VarintError as exc:
        raise RecordError(f"corrupt value: {exc}") from None


def encode_value(identity: bytes, data: bytes) -> bytes:
    """Inverse of :func:`split_value` (for writers in tests and tools)."""
    return encode_varint(len(identity)) + identity + encode_varint(len(data)) + data


@dataclass(frozen=True, slots=True)
class Entry:
    """``catalog.Entry``: one object of a commit, as stored in a range."""

    address: str
    size: int
    address_type: int = AddressType.BY_PREFIX_DEPRECATED
    e_tag: str = ""
    last_modified_seconds: int = 0
    last_modified_nanos: int = 0
    metadata: Mapping[str, str] = field(default_factory=dict, hash=False)
    content_type: str = ""

    @property
    def is_full_address(self) -> bool:
        """True if ``address`` is an absolute URI rather than relative to the storage namespace."""
        return address_is_full(self.address, self.address_type)

    @property
    def last_modified(self) -> dt.datetime:
        return _timestamp(self.last_modified_seconds, self.last_modified_nanos)

    def identity(self) -> bytes:
        """The identity current lakeFS would give this entry (older ranges may hold the legacy one)."""
        return entry_identity(self.size, self.e_tag, self.metadata, self.content_type)

    def legacy_identity(self) -> bytes:
        """The identity lakeFS gave entries before April 2021 (address hashed too)."""
        return entry_identity_legacy(self.address, self.size, self.e_tag, self.metadata)


def _timestamp_fields(data: bytes, p: int, q: int) -> tuple[int, int]:
    """google.protobuf.Timestamp inside ``data[p:q]``; canonical (seconds, nanos) first, else generic."""
    seconds = nanos = 0
    if p < q and data[p] == 0x08:
        seconds, p = decode_uvarint(data, p + 1)
        if seconds >= _INT64_SIGN:
            seconds -= _UINT64_RANGE
    if p < q and data[p] == 0x10:
        nanos, p = decode_uvarint(data, p + 1)
        nanos = as_int32(nanos, "Timestamp", "nanos")
    if p == q:
        return seconds, nanos
    if p > q:
        raise RecordError("Timestamp: field overruns the message")
    return _timestamp_slow(data[p:q], seconds, nanos)


def _timestamp_slow(rest: bytes, seconds: int, nanos: int) -> tuple[int, int]:
    for num, _wire, value in iter_fields(rest, "Timestamp"):
        if num == 1:
            seconds = as_int64(value, "Timestamp", "seconds")
        elif num == 2:
            nanos = as_int32(value, "Timestamp", "nanos")
    return seconds, nanos


def decode_entry(data: bytes) -> Entry:
    """Decode a ``catalog.Entry`` protobuf; unknown fields (and known ones of another wire type) are skipped.

    A flat loop with inline one-byte varints: this runs once per object of every range we read.
    """
    address = e_tag = content_type = ""
    size = address_type = seconds = nanos = 0
    metadata: dict[str, str] = {}
    n = len(data)
    p = 0
    try:
        while p < n:
            tag = data[p]
            p += 1
            if tag >= 0x80:
                tag, p = decode_uvarint(data, p - 1)
            wire = tag & 7
            if wire == 2:
                ln = data[p]
                p += 1
                if ln >= 0x80:
                    ln, p = decode_uvarint(data, p - 1)
                q = p + ln
                if q > n:
                    raise RecordError(f"catalog.Entry: field {tag >> 3} overruns the message")
                if tag == 0x0A:
                    address = data[p:q].decode("utf-8")
                elif tag == 0x12:
                    seconds, nanos = _timestamp_fields(data, p, q)
                elif tag == 0x22:
                    e_tag = data[p:q].decode("utf-8")
                elif tag == 0x2A:
                    mk, mv = decode_string_map_entry(data[p:q], "catalog.Entry.metadata")
                    metadata[mk] = mv
                elif tag == 0x3A:
                    content_type = data[p:q].decode("utf-8")
                p = q
            elif wire == 0:
                v = data[p]
                p += 1
                if v >= 0x80:
                    v, p = decode_uvarint(data, p - 1)
                if tag == 0x18:
                    size = v - _UINT64_RANGE if v >= _INT64_SIGN else v
                elif tag == 0x30:
                    address_type = as_int32(v, "catalog.Entry", "address_type")
            elif wire == 1:
                p += 8
            elif wire == 5:
                p += 4
            else:
                raise RecordError(f"catalog.Entry: unsupported wire type {wire} for field {tag >> 3}")
            if tag < 8:
                raise RecordError("catalog.Entry: field number 0")
        if p != n:
            raise RecordError("catalog.Entry: last field overruns the message")
    except IndexError:
        raise RecordError("catalog.Entry: truncated message") from None
    except UnicodeDecodeError as exc:
        raise RecordError(f"catalog.Entry: string field is not valid UTF-8: {exc}") from None
    except (ProtoError, VarintError) as exc:
        raise RecordError(str(exc)) from None
    return Entry(address, size, address_type, e_tag, seconds, nanos, metadata, content_type)


@dataclass(frozen=True, slots=True)
class RangeRef:
    """A metarange record: one range of a commit, named by its content-hash ID."""

    range_id: str
    min_key: bytes
    max_key: bytes
    estimated_size: int
    count: int


def decode_range_ref(key: bytes, value: bytes) -> RangeRef:
    """Decode a metarange record (key = the range's max key; identity = the range ID in ASCII hex)."""
    identity, data = split_value(value)
    try:
        range_id = identity.decode("ascii")
    except UnicodeDecodeError:
        raise RecordError(f"metarange record {key!r}: range ID {identity.hex()} is not ASCII") from None
    if len(range_id) != 64 or any(c not in "0123456789abcdef" for c in range_id):
        raise RecordError(f"metarange record {key!r}: {range_id!r} is not a 64-hex-digit range ID")
    what = "committed.RangeData"
    min_key = b""
    max_key = b""
    estimated_size = count = 0
    try:
        for num, _wire, v in iter_fields(data, what):
            if num == 1:
                min_key = as_bytes(v, what, "min_key")
            elif num == 2:
                max_key = as_bytes(v, what, "max_key")
            elif num == 3:
                estimated_size = as_int64(v, what, "estimated_size") % (1 << 64)
            elif num == 4:
                count = as_int64(v, what, "count")
    except ProtoError as exc:
        raise RecordError(str(exc)) from None
    # The record key is the range's max key; an absent field means the same thing.
    return RangeRef(range_id, min_key, max_key or key, estimated_size, count)


@dataclass(frozen=True, slots=True)
class CommitData:
    """``graveler.CommitData`` from a commits dump (§2.2); enough to re-create the commit elsewhere."""

    id: str
    committer: str
    message: str
    creation_date_seconds: int
    creation_date_nanos: int
    meta_range_id: str
    metadata: Mapping[str, str] = field(hash=False)
    parents: tuple[str, ...]
    version: int
    generation: int

    @property
    def creation_date(self) -> dt.datetime:
        return _timestamp(self.creation_date_seconds, self.creation_date_nanos)

    def computed_id(self) -> str:
        """The ID lakeFS derives from these fields; a restore refuses the commit if it differs from ``id``."""
        return commit_id(
            self.committer,
            self.message,
            self.meta_range_id,
            self.creation_date_seconds,
            self.metadata,
            self.parents,
        )


def decode_commit_data(data: bytes) -> CommitData:
    what = "graveler.CommitData"
    fields: dict[str, str] = {"id": "", "committer": "", "message": "", "meta_range_id": ""}
    names = {1: "id", 2: "committer", 3: "message", 5: "meta_range_id"}
    seconds = nanos = version = generation = 0
    metadata: dict[str, str] = {}
    parents: list[str] = []
    try:
        for num, _wire, v in iter_fields(data, what):
            if num in names:
                fields[names[num]] = as_str(v, what, names[num])
            elif num == 4:
                seconds, nanos = decode_timestamp(as_bytes(v, what, "creation_date"), what)
            elif num == 6:
                k, val = decode_string_map_entry(as_bytes(v, what, "metadata"), what)
                metadata[k] = val
            elif num == 7:
                parents.append(as_str(v, what, "parents"))
            elif num == 8:
                version = as_int32(v, what, "version")
            elif num == 9:
                generation = as_int32(v, what, "generation")
    except ProtoError as exc:
        raise RecordError(str(exc)) from None
    return CommitData(
        fields["id"],
        fields["committer"],
        fields["message"],
        seconds,
        nanos,
        fields["meta_range_id"],
        metadata,
        tuple(parents),
        version,
        generation,
    )


@dataclass(frozen=True, slots=True)
class BranchData:
    """``graveler.BranchData`` from a branches dump (staging tokens mean nothing to another installation)."""

    id: str
    commit_id: str
    staging_token: str = ""
    sealed_tokens: tuple[str, ...] = ()
    hidden: bool = False


def decode_branch_data(data: bytes) -> BranchData:
    what = "graveler.BranchData"
    branch_id = commit = staging = ""
    sealed: list[str] = []
    hidden = False
    try:
        for num, _wire, v in iter_fields(data, what):
            if num == 1:
                branch_id = as_str(v, what, "id")
            elif num == 2:
                commit = as_str(v, what, "commit_id")
            elif num == 3:
                staging = as_str(v, what, "staging_token")
            elif num == 4:
                sealed.append(as_str(v, what, "sealed_tokens"))
            elif num == 5:
                hidden = as_bool(v, what, "hidden")
    except ProtoError as exc:
        raise RecordError(str(exc)) from None
    return BranchData(branch_id, commit, staging, tuple(sealed), hidden)


@dataclass(frozen=True, slots=True)
class TagData:
    """``graveler.TagData`` from a tags dump."""

    id: str
    commit_id: str


def decode_tag_data(data: bytes) -> TagData:
    what = "graveler.TagData"
    tag_id = commit = ""
    try:
        for num, _wire, v in iter_fields(data, what):
            if num == 1:
                tag_id = as_str(v, what, "id")
            elif num == 2:
                commit = as_str(v, what, "commit_id")
    except ProtoError as exc:
        raise RecordError(str(exc)) from None
    return TagData(tag_id, commit)
