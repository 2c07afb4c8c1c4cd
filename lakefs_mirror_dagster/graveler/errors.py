"""Errors of reading lakeFS's own formats: bytes that are not what lakeFS writes.

``ValueError`` subclasses (bad input data), under one ``GravelerError`` so a caller can refuse any file it
cannot fully read with one ``except``, and under ``LakeFSMirrorError`` so the CLI prints them as one line.
"""

from __future__ import annotations

from ..errors import LakeFSMirrorError

__all__ = [
    "GravelerError",
    "ProtoError",
    "RangeIdMismatchError",
    "RecordError",
    "SSTableError",
    "VarintError",
]


class GravelerError(LakeFSMirrorError, ValueError):
    """Bytes that are not a readable lakeFS sstable, record, protobuf or varint."""


class VarintError(GravelerError):
    """A varint runs past the end of its buffer or is longer than 64 bits."""


class ProtoError(GravelerError):
    """Malformed protobuf bytes."""


class RecordError(GravelerError):
    """A record's value is not what lakeFS writes (bad varint, bad length, bad protobuf)."""


class SSTableError(GravelerError):
    """The bytes are not a readable lakeFS sstable; the message says what is wrong and where."""


class RangeIdMismatchError(SSTableError):
    """The file decodes, but its content does not hash to the ID it is stored (or referenced) under."""
