"""lakeFS identity encoding (``pkg/ident``) and the IDs built on it.

lakeFS names commits and entries by a SHA-256 over a small typed encoding. Recomputing these here
lets the replicator verify what it copies before it asks a destination lakeFS to accept it (the
destination recomputes the commit ID too and rejects a mismatch).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "IdentityWriter",
    "commit_id",
    "entry_identity",
    "entry_identity_legacy",
    "parents_identity",
]

_TAG_BYTES = b"\x00"
_TAG_STRING = b"\x01"
_TAG_INT64 = b"\x02"
_TAG_STRING_SLICE = b"\x03"
_TAG_STRING_MAP = b"\x04"
_TAG_EMBEDDED = b"\x05"

_INT64 = struct.Struct(">q")
_UINT64 = struct.Struct(">Q")
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _utf8(value: str | bytes) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else value


class IdentityWriter:
    """Feed typed values into a SHA-256 stream exactly as lakeFS's ``ident.AddressWriter`` does.

    Every ``add_*`` method returns ``self`` so that an identity reads like the Go builder chain.
    """

    __slots__ = ("_h",)

    def __init__(self, hasher: Any = None) -> None:
        """``hasher``: an existing hashlib object to continue (the range ID appends a map to a stream)."""
        self._h: Any = hashlib.sha256() if hasher is None else hasher

    def add_int64(self, value: int) -> IdentityWriter:
        """Tag, a length byte 8, then the big-endian two's complement (Go casts int64 to uint64)."""
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"identity int64 out of range: {value}")
        self._h.update(_TAG_INT64 + b"\x08" + _INT64.pack(value))
        return self

    def _add_len(self, n: int) -> None:
        self._h.update(_TAG_INT64 + b"\x08" + _UINT64.pack(n))

    def add_bytes(self, value: bytes) -> IdentityWriter:
        self._h.update(_TAG_BYTES)
        self._add_len(len(value))
        self._h.update(value)
        return self

    def add_string(self, value: str | bytes) -> IdentityWriter:
        """Go strings are byte strings; ``bytes`` is hashed as is, ``str`` as UTF-8."""
        raw = value.encode("utf-8") if isinstance(value, str) else value
        self._h.update(_TAG_STRING)
        self._add_len(len(raw))
        self._h.update(raw)
        return self

    def add_string_opt(self, value: str) -> IdentityWriter:
        """Only non-empty strings count, so old identities stay valid when a field is added."""
        if value:
            self.add_string(value)
        return self

    def add_string_slice(self, values: Iterable[str]) -> IdentityWriter:
        items = list(values)
        self._h.update(_TAG_STRING_SLICE)
        self._add_len(len(items))
        for item in items:
            self.add_string(item)
        return self

    def add_string_map(self, values: Mapping[str, str] | Mapping[bytes, bytes] | None) -> IdentityWriter:
        """Keys in byte-wise order of their UTF-8 bytes, as Go ``sort.Strings`` orders them."""
        items = [(_utf8(k), _utf8(v)) for k, v in (values or {}).items()]
        items.sort()
        self._h.update(_TAG_STRING_MAP)
        self._add_len(len(items))
        for key, value in items:
            self.add_string(key)
            self.add_string(value)
        return self

    def add_embedded(self, identity: bytes) -> IdentityWriter:
        """An embedded identifiable contributes its own identity bytes."""
        self._h.update(_TAG_EMBEDDED)
        return self.add_bytes(identity)

    def digest(self) -> bytes:
        return bytes(self._h.digest())

    def hexdigest(self) -> str:
        return str(self._h.hexdigest())


def parents_identity(parents: Iterable[str]) -> bytes:
    """``CommitParents.Identity``: order matters, so merges keep their parent order."""
    return IdentityWriter().add_string_slice(parents).digest()


def commit_id(
    committer: str,
    message: str,
    metarange_id: str,
    creation_date: int,
    metadata: Mapping[str, str] | None,
    parents: Iterable[str],
) -> str:
    """The commit ID lakeFS computes (``graveler.Commit.Identity``); version/generation are not part of it.

    ``creation_date`` is Unix seconds (lakeFS drops sub-second precision before hashing).
    """
    return (
        IdentityWriter()
        .add_string("commit:v1")
        .add_string(committer)
        .add_string(message)
        .add_string(metarange_id)
        .add_int64(int(creation_date))
        .add_string_map(metadata)
        .add_embedded(parents_identity(parents))
        .hexdigest()
    )


def entry_identity(size: int, e_tag: str, metadata: Mapping[str, str] | None, content_type: str = "") -> bytes:
    """Identity of an object entry as lakeFS writes it since April 2021 (address not included)."""
    return (
        IdentityWriter()
        .add_int64(size)
        .add_string(e_tag)
        .add_string_map(metadata)
        .add_string_opt(content_type)
        .digest()
    )


def entry_identity_legacy(address: str, size: int, e_tag: str, metadata: Mapping[str, str] | None) -> bytes:
    """Identity of an object entry written before lakeFS PR #1805 (address hashed first, no content type).

    Committed ranges keep these identities forever, which is why identities are copied, never re-derived.
    """
    return IdentityWriter().add_string(address).add_int64(size).add_string(e_tag).add_string_map(metadata).digest()
