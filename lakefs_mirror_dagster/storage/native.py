"""Object GET, PUT (single and multipart) and HEAD through obstore (Rust's object_store): one data path for the
S3 and Azure stores (``s3_native``, ``azure``).

A backfill of small objects is bound by the client's CPU per request; obstore signs and sends in Rust with the GIL
released (figures: benchmarks/README.md, "obstore against the paths it replaced"; ``store_paths.py``). Multipart
uploads use obstore's buffered writer: every part but the last has the writer's buffer size, at most
``UPLOAD_PARTS_HELD`` parts are held, and a failure aborts the upload (details on ``NativeRequests``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from typing import Any

from .base import ObjectStat
from .streams import strip_etag

__all__ = ["UPLOAD_CONCURRENCY", "UPLOAD_PARTS_HELD", "Body", "ErrorResponse", "NativeRequests", "native_error"]

#: Parts of one multipart upload sent at once: a large object uploads faster than part after part, and the
#: byte budget still bounds the total (each upload reserves ``UPLOAD_PARTS_HELD`` parts).
UPLOAD_CONCURRENCY = 2
#: The most parts one upload holds: those being sent, and the one being filled from the source.
UPLOAD_PARTS_HELD = UPLOAD_CONCURRENCY + 1


class ErrorResponse(Exception):
    """A store's non-success answer: the HTTP status and the store's error code and message (never request
    headers). Each store maps it onto the storage errors (``s3_errors``, ``azure``)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code or f'HTTP {status}'}: {message}" if message else code or f"HTTP {status}")
        self.status = status
        self.code = code
        self.message = message

    @classmethod
    def from_body(cls, status: int, body: bytes) -> ErrorResponse:
        """The answer of a request sent outside obstore (``s3_native``'s streamed PUT), from its XML error body."""
        text = body.decode("utf-8", "replace")
        code, message = _CODE.search(text), _MESSAGE.search(text)
        return cls(status, code.group(1) if code else "", message.group(1) if message else "")


class Body:
    """A GET body with ``read``/``readinto``/``close`` over obstore's chunk iterator."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = memoryview(b"")

    def _refill(self) -> bool:
        """The next chunk into ``_pending`` when it is empty; False at the end of the body."""
        if not self._pending:
            try:
                self._pending = memoryview(next(self._chunks))
            except StopIteration:
                return False
            except Exception as exc:  # a body broken half-way is worth reading again, whatever broke it
                raise ConnectionError(str(exc).splitlines()[0][:300]) from exc
        return True

    def read(self, amt: int | None = None) -> bytes:
        if amt is None or amt < 0:
            rest = [bytes(self._pending), *self._chunks]
            self._pending = memoryview(b"")
            return b"".join(rest)
        if not self._refill():
            return b""
        out, self._pending = self._pending[:amt], self._pending[amt:]
        return bytes(out)

    def readinto(self, buffer: Any) -> int:
        """``read`` straight into ``buffer``: the bytes are copied once, not twice."""
        if not len(buffer) or not self._refill():
            return 0
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        """Drop the rest: obstore closes the connection of a body abandoned half-way."""
        self._pending = memoryview(b"")
        self._chunks = iter(())


_STATUS = re.compile(r"status code: (\d{3})")
#: The error code in the answer's body, which obstore quotes in its message (S3's NoSuchBucket vs NoSuchKey,
#: Azure's ContainerNotFound vs BlobNotFound: both answer in ``<Code>`` XML).
_CODE = re.compile(r"<Code>([^<]{1,200})</Code>")
_MESSAGE = re.compile(r"<Message>([^<]{0,300})</Message>")


def native_error(exc: Exception) -> Exception:
    """obstore's errors as the answers they stand for (one error mapping per store for every request path): its
    missing objects arrive as FileNotFoundError, refusals as PermissionError or its own classes; an error without
    an answer (refused, reset, timed out after obstore's own retries) becomes a ConnectionError."""
    from obstore import exceptions as oe

    text = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    code = _CODE.search(str(exc))
    if isinstance(exc, (FileNotFoundError, oe.NotFoundError)):
        return ErrorResponse(404, code.group(1) if code else "NoSuchKey", text)
    if isinstance(exc, (PermissionError, oe.PermissionDeniedError, oe.UnauthenticatedError)):
        return ErrorResponse(403, code.group(1) if code else "AccessDenied", text)
    if isinstance(exc, (OSError, oe.BaseError)):
        status = _STATUS.search(str(exc))
        if status is None:
            return ConnectionError(text)
        return ErrorResponse(int(status.group(1)), code.group(1) if code else "", text)
    return exc


class NativeRequests:
    """obstore stores, one per bucket or container (obstore binds a store to one), sharing one Rust runtime.
    Errors are raised as ``native_error`` gives them.

    The writer sends up to ``UPLOAD_CONCURRENCY`` parts at once while the next is filled, so an upload holds at most
    ``UPLOAD_PARTS_HELD`` parts: what the byte budget reserves for it; the S3 multipart ETag at the mirror is the one
    that part size gives. A failure while parts are written aborts the upload (S3: AbortMultipartUpload; Azure:
    nothing was committed and Azure drops uncommitted blocks), and so does a refused completion. A part failing only
    after the last one was handed over makes object_store's ``finish`` return without an abort: on S3 the upload
    stays incomplete (never a visible object) until the bucket's lifecycle rule removes it.
    """

    #: Whether single PUTs go without a signed payload (S3, ``s3_native``); multipart parts then go through stores
    #: of their own (``_new_store(..., for_parts=True)``), which sign them.
    unsigned_puts = False

    def __init__(self) -> None:
        self._stores: dict[tuple[str, bool], Any] = {}

    def _new_store(self, bucket: str, *, for_parts: bool = False) -> Any:
        """The obstore store of ``bucket``, built from the blockstore's settings; ``for_parts``: the one that
        sends the parts of multipart uploads (a store may sign those differently, see ``s3_native``)."""
        raise NotImplementedError

    def _store(self, bucket: str, *, for_parts: bool = False) -> Any:
        for_parts = for_parts and self.unsigned_puts
        store = self._stores.get((bucket, for_parts))
        if store is None:  # threads racing here build equal stores
            store = self._stores[(bucket, for_parts)] = self._new_store(bucket, for_parts=for_parts)
        return store

    def head(self, bucket: str, key: str) -> ObjectStat | None:
        """Size and ETag, or None for a 404 (which may also mean a missing bucket: HEAD answers carry no body)."""
        import obstore

        try:
            meta = obstore.head(self._store(bucket), key)
        except (FileNotFoundError, obstore.exceptions.NotFoundError):
            return None
        except Exception as exc:
            raise native_error(exc) from exc
        return ObjectStat(size=int(meta["size"]), etag=strip_etag(meta.get("e_tag")))

    def get(self, bucket: str, key: str) -> Body:
        import obstore

        try:
            result = obstore.get(self._store(bucket), key)
        except Exception as exc:
            raise native_error(exc) from exc
        return Body(iter(result.stream(min_chunk_size=1024 * 1024)))

    def put(self, bucket: str, key: str, data: bytes | bytearray) -> str | None:
        """One PUT of ``data`` (handed over without a copy); returns the stored object's ETag."""
        import obstore

        try:
            result = obstore.put(self._store(bucket), key, data, use_multipart=False)
        except Exception as exc:
            raise native_error(exc) from exc
        return strip_etag(result.get("e_tag"))

    def upload(self, bucket: str, key: str, parts: Iterable[bytes | bytearray], part_size: int) -> str | None:
        """Store ``parts`` (each ``part_size`` bytes but the last) as one object in a multipart upload (one PUT if
        they add up to less than a part); returns its ETag. Parts are handed over without a copy and sent as they
        come. An error from ``parts`` (the source failed, a size or checksum check refused it) aborts the upload
        and is raised as it is."""
        import obstore

        try:
            writer = obstore.open_writer(
                self._store(bucket, for_parts=True), key, buffer_size=part_size, max_concurrency=UPLOAD_CONCURRENCY
            )
        except Exception as exc:
            raise native_error(exc) from exc
        try:
            for part in parts:
                try:
                    writer.write(part)
                except Exception as exc:
                    raise native_error(exc) from exc
        except BaseException as exc:
            # obstore's writer aborts when it leaves its context with an error; best effort (S3 lifecycle rules
            # clean up what an abort could not)
            with contextlib.suppress(Exception):
                writer.__exit__(type(exc), exc, exc.__traceback__)
            raise
        try:
            writer.close()
        except Exception as exc:
            raise native_error(exc) from exc
        stored = self.head(bucket, key)  # obstore's writer does not return the stored object's ETag
        return stored.etag if stored is not None else None
