"""LEB128 varints as used by sstables (unsigned) and by lakeFS values (Go ``binary.PutVarint``, zig-zag).

Both readers take ``(buf, pos)`` and return ``(value, new_pos)`` so that hot loops can walk a buffer
without slicing it.
"""

from __future__ import annotations

from .errors import VarintError

__all__ = [
    "VarintError",
    "decode_uvarint",
    "decode_varint",
    "encode_uvarint",
    "encode_varint",
    "zigzag_decode",
    "zigzag_encode",
]

_MAX_VARINT_LEN = 10
_UINT64_LIMIT = 1 << 64


def decode_uvarint(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Read an unsigned LEB128 varint at ``pos``; fail loudly on truncation or overflow."""
    result = 0
    shift = 0
    n = len(buf)
    start = pos
    while True:
        if pos >= n:
            raise VarintError(f"varint at offset {start} runs past the end of the buffer ({n} bytes)")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result >= _UINT64_LIMIT:
                raise VarintError(f"varint at offset {start} overflows 64 bits")
            return result, pos
        shift += 7
        if pos - start >= _MAX_VARINT_LEN:
            raise VarintError(f"varint at offset {start} is longer than {_MAX_VARINT_LEN} bytes")


def zigzag_decode(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


def zigzag_encode(v: int) -> int:
    return (v << 1) if v >= 0 else ((-v) << 1) - 1


def decode_varint(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Read a signed zig-zag varint (Go ``binary.Varint``)."""
    u, pos = decode_uvarint(buf, pos)
    return zigzag_decode(u), pos


def encode_uvarint(value: int) -> bytes:
    if value < 0 or value >= _UINT64_LIMIT:
        raise VarintError(f"uvarint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Go ``binary.PutVarint``: zig-zag, then unsigned LEB128."""
    if not -(1 << 63) <= value < (1 << 63):
        raise VarintError(f"varint out of int64 range: {value}")
    return encode_uvarint(zigzag_encode(value))
