"""Minimal protobuf wire-format reading: just enough for lakeFS's few, stable messages.

Hand-written so that the package needs no protobuf runtime or generated code; unknown fields are
skipped as protobuf requires, so newer lakeFS versions that add fields still decode.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from .errors import ProtoError
from .varint import VarintError, decode_uvarint

__all__ = [
    "WIRE_FIXED32",
    "WIRE_FIXED64",
    "WIRE_LEN",
    "WIRE_VARINT",
    "ProtoError",
    "as_bool",
    "as_int32",
    "as_int64",
    "as_str",
    "decode_string_map_entry",
    "decode_timestamp",
    "iter_fields",
]

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LEN = 2
WIRE_FIXED32 = 5

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_INT64_SIGN = 1 << 63
_UINT64_RANGE = 1 << 64
_INT32_SIGN = 1 << 31


FieldValue = int | bytes


def iter_fields(buf: bytes, what: str) -> Iterator[tuple[int, int, FieldValue]]:
    """Yield (field number, wire type, value); LEN values are bytes, the others ints."""
    pos = 0
    n = len(buf)
    try:
        while pos < n:
            key, pos = decode_uvarint(buf, pos)
            field, wire = key >> 3, key & 7
            if field == 0:
                raise ProtoError(f"{what}: field number 0 at offset {pos}")
            value: FieldValue
            if wire == WIRE_VARINT:
                value, pos = decode_uvarint(buf, pos)
            elif wire == WIRE_LEN:
                ln, pos = decode_uvarint(buf, pos)
                if pos + ln > n:
                    raise ProtoError(f"{what}: field {field} length {ln} runs past the end ({n} bytes)")
                value = buf[pos : pos + ln]
                pos += ln
            elif wire == WIRE_FIXED64:
                if pos + 8 > n:
                    raise ProtoError(f"{what}: truncated fixed64 field {field}")
                value = _U64.unpack_from(buf, pos)[0]
                pos += 8
            elif wire == WIRE_FIXED32:
                if pos + 4 > n:
                    raise ProtoError(f"{what}: truncated fixed32 field {field}")
                value = _U32.unpack_from(buf, pos)[0]
                pos += 4
            else:
                raise ProtoError(f"{what}: unsupported wire type {wire} for field {field}")
            yield field, wire, value
    except VarintError as exc:
        raise ProtoError(f"{what}: {exc}") from None


def _expect(value: FieldValue, kind: type, what: str, field: str) -> None:
    if not isinstance(value, kind):
        raise ProtoError(f"{what}: field {field} has the wrong wire type")


def as_int64(value: FieldValue, what: str, field: str) -> int:
    """A varint read back as Go int64 (negative numbers are 10-byte two's complement)."""
    _expect(value, int, what, field)
    assert isinstance(value, int)
    return value - _UINT64_RANGE if value >= _INT64_SIGN else value


def as_int32(value: FieldValue, what: str, field: str) -> int:
    """int32 is sign-extended to 64 bits on the wire; truncate like protobuf decoders do."""
    v = as_int64(value, what, field) & 0xFFFFFFFF
    return v - (1 << 32) if v >= _INT32_SIGN else v


def as_bool(value: FieldValue, what: str, field: str) -> bool:
    _expect(value, int, what, field)
    return bool(value)


def as_bytes(value: FieldValue, what: str, field: str) -> bytes:
    _expect(value, bytes, what, field)
    assert isinstance(value, bytes)
    return value


def as_str(value: FieldValue, what: str, field: str) -> str:
    """proto3 strings must be valid UTF-8 (Go's decoder rejects anything else, so do we)."""
    raw = as_bytes(value, what, field)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtoError(f"{what}: field {field} is not valid UTF-8: {exc}") from None


def decode_timestamp(buf: bytes, what: str) -> tuple[int, int]:
    """google.protobuf.Timestamp -> (seconds, nanos)."""
    seconds = 0
    nanos = 0
    for field, _wire, value in iter_fields(buf, what):
        if field == 1:
            seconds = as_int64(value, what, "seconds")
        elif field == 2:
            nanos = as_int32(value, what, "nanos")
    return seconds, nanos


def decode_string_map_entry(buf: bytes, what: str) -> tuple[str, str]:
    """One entry of a ``map<string, string>`` (a message with key=1, value=2)."""
    key = ""
    val = ""
    for field, _wire, value in iter_fields(buf, what):
        if field == 1:
            key = as_str(value, what, "map key")
        elif field == 2:
            val = as_str(value, what, "map value")
    return key, val
