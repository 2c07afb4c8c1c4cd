"""Content checks for copied objects: lakeFS records each object's ETag, and for objects written in one
piece that ETag is the MD5 of the bytes (on the local blockstore and on S3 alike).

A copy hashes what it reads and refuses to finish a write whose bytes do not hash to the entry's MD5;
stores that report an MD5 ETag for what they stored (S3 single-part writes and HEADs) are compared too,
which catches damage between this process and the store. Multipart ETags (``<hex>-<parts>``) and other
checksums are not MD5s of the content: those objects are checked by size only.
"""

from __future__ import annotations

import hashlib
import re

from .base import ReadableStream
from .errors import ChecksumMismatchError

__all__ = ["VerifyingReader", "content_md5", "md5_conflict"]

_MD5_HEX = re.compile(r"[0-9a-f]{32}")


def content_md5(etag: str | None) -> str | None:
    """The MD5 hex digest an ETag stands for, or None when it is not a plain MD5 (multipart, empty, other)."""
    if not etag:
        return None
    text = etag.strip().strip('"').lower()
    return text if _MD5_HEX.fullmatch(text) else None


def md5_conflict(expected_etag: str | None, found_etag: str | None) -> bool:
    """True only when both ETags are plain MD5s and they differ: proof that the content is not the same."""
    expected, found = content_md5(expected_etag), content_md5(found_etag)
    return expected is not None and found is not None and expected != found


class VerifyingReader:
    """Passes a stream through, hashing it; the read that completes ``size`` bytes raises
    ChecksumMismatchError instead of returning them when the MD5 is wrong, so the store aborts the write
    and nothing is stored under the name."""

    def __init__(self, stream: ReadableStream, *, size: int, md5: str, uri: str) -> None:
        self._stream = stream
        self._remaining = size
        self._md5 = md5
        self._uri = uri
        self._hash = hashlib.md5(usedforsecurity=False)

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._stream.read(size)
        if not chunk:
            return chunk
        self._hash.update(chunk)
        self._remaining -= len(chunk)
        if self._remaining <= 0:
            self._check()
        return chunk

    def _check(self) -> None:
        got = self._hash.hexdigest()
        if self._remaining == 0 and got != self._md5:
            raise ChecksumMismatchError(
                f"copy {self._uri}: the bytes read hash to MD5 {got}, lakeFS recorded {self._md5}; nothing was stored",
                uri=self._uri,
            )
