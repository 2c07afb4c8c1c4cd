"""Small stream helpers every object-store blockstore needs (s3, gs, azure): one copy, not three."""

from __future__ import annotations

from .base import ReadableStream
from .errors import SizeMismatchError

__all__ = ["READ_PIECE", "fill", "read_exact", "size_mismatch", "strip_etag"]

#: The largest single read ``fill`` makes: one read of n bytes from an HTTP body costs two or three
#: temporary copies of n bytes in http.client and urllib3, so a part is read in pieces of this size.
READ_PIECE = 1024 * 1024


def read_exact(stream: ReadableStream, n: int) -> bytes:
    """Read up to ``n`` bytes, looping over short reads; fewer only at end of stream."""
    chunks: list[bytes] = []
    remaining = n
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def fill(stream: ReadableStream, n: int) -> bytearray:
    """Read up to ``n`` bytes into one buffer, ``READ_PIECE`` at a time; fewer only at end of stream. A part
    read this way costs its own size in memory (``read_exact`` of a large part costs up to three times it)."""
    buffer = bytearray(n)
    filled = 0
    with memoryview(buffer) as view:
        while filled < n:
            piece = stream.read(min(READ_PIECE, n - filled))
            if not piece:
                break
            view[filled : filled + len(piece)] = piece
            filled += len(piece)
    del buffer[filled:]
    return buffer


def strip_etag(etag: str | None) -> str | None:
    """ETags arrive quoted from most stores; compare them bare."""
    return etag.strip('"') if etag else None


def size_mismatch(uri: str, expected: int, got: int | None) -> SizeMismatchError:
    """The error for a source that delivered fewer (``got``) or more (``None``) bytes than announced."""
    got_text = f"more than {expected}" if got is None else str(got)
    return SizeMismatchError(
        f"write {uri}: expected {expected} bytes but the source delivered {got_text}; nothing was stored", uri=uri
    )
