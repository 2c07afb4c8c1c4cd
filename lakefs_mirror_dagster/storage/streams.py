"""Small stream helpers every object-store blockstore needs (s3, gs, azure): one copy, not three."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

from .base import ReadableStream
from .errors import SizeMismatchError, StorageError

__all__ = [
    "READ_PIECE",
    "BodyReader",
    "CheckedParts",
    "check_size",
    "exact_pieces",
    "fill",
    "iter_parts",
    "read_exact",
    "size_mismatch",
    "strip_etag",
    "whole_or_head",
]

#: The largest single read ``fill`` makes: one read of n bytes from an HTTP body costs two or three
#: temporary copies of n bytes in http.client and urllib3, so a part is read in pieces of this size.
READ_PIECE = 1024 * 1024
#: The largest ``readinto`` ``fill`` asks for: above a buffered reader's 1 MiB buffer, so it reads into ours.
_READINTO_PIECE = 4 * READ_PIECE


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
    read this way costs its own size in memory (``read_exact`` of a large part costs up to three times it).
    A stream with ``readinto`` (a buffered store body, ``VerifyingReader``) writes straight into the buffer, in
    pieces larger than a 1 MiB read buffer, which a buffered reader then passes by."""
    buffer = bytearray(n)
    filled = 0
    readinto = getattr(stream, "readinto", None)
    with memoryview(buffer) as view:
        while filled < n:
            if readinto is not None:
                got = readinto(view[filled : filled + min(_READINTO_PIECE, n - filled)])
            else:
                piece = stream.read(min(READ_PIECE, n - filled))
                got = len(piece)
                view[filled : filled + got] = piece
            if not got:
                break
            filled += got
    del buffer[filled:]
    return buffer


def exact_pieces(uri: str, stream: ReadableStream, size: int, piece_size: int = READ_PIECE) -> Iterator[memoryview]:
    """The ``size`` bytes of ``stream`` as it delivers them, each a view of one reused buffer of ``piece_size``
    bytes that is valid until the next is asked for: a streamed PUT holds one piece, whatever the object's size.
    The last piece comes only after the stream showed it has no more, so a source that delivers fewer or more
    bytes raises ``size_mismatch`` before a request could complete with them."""
    view = memoryview(bytearray(max(1, min(piece_size, size))))
    readinto = getattr(stream, "readinto", None)
    sent = 0
    while sent < size:
        want = view[: min(len(view), size - sent)]
        got = _read_into(stream, readinto, want)
        if not got:
            raise size_mismatch(uri, size, sent)
        sent += got
        if sent == size:
            _check_drained(uri, stream, readinto, size)
        yield view[:got]
    if size == 0:
        _check_drained(uri, stream, readinto, size)


def _read_into(stream: ReadableStream, readinto: Callable[[memoryview], int] | None, view: memoryview) -> int:
    if readinto is not None:
        return readinto(view) or 0
    piece = stream.read(len(view))
    view[: len(piece)] = piece
    return len(piece)


def _check_drained(uri: str, stream: ReadableStream, readinto: Callable[[memoryview], int] | None, size: int) -> None:
    if _read_into(stream, readinto, memoryview(bytearray(1))):
        raise size_mismatch(uri, size, None)


def strip_etag(etag: str | None) -> str | None:
    """ETags arrive quoted from most stores; compare them bare."""
    return etag.strip('"') if etag else None


def size_mismatch(uri: str, expected: int, got: int | None) -> SizeMismatchError:
    """The error for a source that delivered fewer (``got``) or more (``None``) bytes than announced."""
    got_text = f"more than {expected}" if got is None else str(got)
    return SizeMismatchError(
        f"write {uri}: expected {expected} bytes but the source delivered {got_text}; nothing was stored", uri=uri
    )


def iter_parts(head: bytearray, stream: ReadableStream, part_size: int) -> Iterator[bytearray]:
    """Parts of exactly ``part_size`` bytes (the last may be shorter), read on demand.

    ``head`` is what was already read to decide on multipart. Each part is filled into one buffer, and the
    previous one is dropped before the next is read, so that about one part is held in memory.
    """
    pending = head
    while len(pending) >= part_size:
        yield pending[:part_size]
        del pending[:part_size]
    while True:
        part = fill(stream, part_size) if not pending else pending + fill(stream, part_size - len(pending))
        pending = bytearray()
        length = len(part)
        if not length:
            return
        yield part
        del part
        if length < part_size:
            return


def check_size(uri: str, expected: int | None, got: int) -> None:
    """Raise ``size_mismatch`` if the source delivered ``got`` bytes where ``expected`` were announced."""
    if expected is not None and got != expected:
        raise size_mismatch(uri, expected, None if got > expected else got)


class CheckedParts:
    """The parts of one upload (``iter_parts``), refused as soon as the source delivers more than ``size`` bytes or
    needs more than ``max_parts`` parts, and at the end if it delivered fewer; ``written`` counts them."""

    def __init__(
        self, uri: str, head: bytearray, stream: ReadableStream, part_size: int, size: int | None, *, max_parts: int
    ) -> None:
        self._uri = uri
        self._max_parts = max_parts
        self._head = head
        self._stream = stream
        self.part_size = part_size
        self._size = size
        self.written = 0

    def __iter__(self) -> Iterator[bytearray]:
        for count, body in enumerate(iter_parts(self._head, self._stream, self.part_size), start=1):
            self.written += len(body)
            if self._size is not None and self.written > self._size:
                check_size(self._uri, self._size, self.written)
            if count > self._max_parts:
                raise StorageError(
                    f"write {self._uri}: object needs more than {self._max_parts} parts of {self.part_size} bytes; "
                    "pass its size or raise multipart_chunk_size",
                    uri=self._uri,
                )
            yield body
            del body
        check_size(self._uri, self._size, self.written)


def whole_or_head(uri: str, stream: ReadableStream, size: int | None, threshold: int) -> tuple[bytearray, bool]:
    """What a store's ``write_stream`` reads before it chooses: the whole object (``True``) when it is smaller than
    the multipart ``threshold``, checked against ``size``; else the bytes read to find out (none when ``size``
    says so), to be sent first in parts (``False``)."""
    if size is not None and size < 0:
        raise ValueError(f"write {uri}: size must not be negative, got {size}")
    if size is not None and size < threshold:
        data = fill(stream, size + 1)
        check_size(uri, size, len(data))
        return data, True
    if size is None:
        head = fill(stream, threshold)
        return head, len(head) < threshold
    return bytearray(), False


class BodyReader(io.RawIOBase):
    """A raw stream over an HTTP body with ``read(n)``/``close`` (obstore's ``native.Body``, botocore's
    StreamingBody) that raises what ``on_error`` makes of a mid-stream error (a store's storage error)."""

    def __init__(self, body: Any, on_error: Callable[[Exception], Exception]) -> None:
        super().__init__()
        self._body = body
        self._on_error = on_error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if len(buffer) == 0:
            return 0
        try:
            if hasattr(self._body, "readinto"):  # obstore's body copies straight into the buffer
                return int(self._body.readinto(buffer))
            data = self._body.read(len(buffer))
        except Exception as exc:
            raise self._on_error(exc) from exc
        n = len(data)
        buffer[:n] = data
        return n

    def readall(self) -> bytes:
        try:
            return bytes(self._body.read())
        except Exception as exc:
            raise self._on_error(exc) from exc

    def close(self) -> None:
        if not self.closed:
            try:
                self._body.close()
            finally:
                super().close()
