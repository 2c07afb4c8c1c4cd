"""Small stream helpers every object-store blockstore needs (s3, gs, azure): one copy, not three."""

from __future__ import annotations

from .base import ReadableStream
from .errors import SizeMismatchError

__all__ = ["read_exact", "size_mismatch", "strip_etag"]


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


def strip_etag(etag: str | None) -> str | None:
    """ETags arrive quoted from most stores; compare them bare."""
    return etag.strip('"') if etag else None


def size_mismatch(uri: str, expected: int, got: int | None) -> SizeMismatchError:
    """The error for a source that delivered fewer (``got``) or more (``None``) bytes than announced."""
    got_text = f"more than {expected}" if got is None else str(got)
    return SizeMismatchError(
        f"write {uri}: expected {expected} bytes but the source delivered {got_text}; nothing was stored", uri=uri
    )
