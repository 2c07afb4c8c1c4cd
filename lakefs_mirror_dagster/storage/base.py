"""The blockstore interface that the replication engine talks to, whatever the storage behind it."""

from __future__ import annotations

import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, ClassVar, Protocol

from ..observe import observing, timed
from .errors import ObjectNotFound, StorageError

__all__ = ["Blockstore", "ObjectInfo", "ObjectStat", "ReadableStream"]


class ReadableStream(Protocol):
    """Anything with a binary ``read(n)``: files, HTTP bodies, ``io.BytesIO``."""

    def read(self, size: int = ..., /) -> bytes: ...


@dataclass(frozen=True)
class ObjectStat:
    """What a HEAD tells us: the size, the store's ETag when it has one (None for local), and for local
    files a change token (modification time and inode), since they have no ETag."""

    size: int
    etag: str | None = None
    version: str | None = None

    @property
    def fingerprint(self) -> str:
        """Changes when the object is rewritten with other content: a validated file is trusted again
        later only while its fingerprint is the one it had when it was validated."""
        return f"{self.size}/{self.version or self.etag or ''}"


@dataclass(frozen=True)
class ObjectInfo:
    """One listed object: its full URI (same form as the listed prefix), size and ETag."""

    uri: str
    size: int
    etag: str | None = None


class Blockstore(ABC):
    """Object storage addressed by full storage URIs (``s3://bucket/key``, ``local://name/path``).

    Implementations are thread-safe: a transfer pool calls one instance from many threads.
    Writes are all-or-nothing: after a failure no object (or the previous one) exists under the name.
    """

    #: URI schemes this store serves.
    schemes: ClassVar[frozenset[str]] = frozenset()
    #: Buffer size for streamed reads and local writes; bounds memory per transfer.
    chunk_size: int = 8 * 1024 * 1024
    #: The store type its timed requests are reported under (``store_label``); "" for the class's name.
    metrics_label: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every store's requests are timed for ``observe``'s hooks, whichever class implements them: the methods
        of ``_TIMED`` a subclass defines are wrapped (once; a call from inside another timed call is not timed
        again, so ``write_bytes`` over ``write_stream`` counts one ``put``)."""
        super().__init_subclass__(**kwargs)
        for name, operation in _TIMED.items():
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_timed", False):
                setattr(cls, name, _timed_method(method, operation))

    @abstractmethod
    def describe(self) -> str:
        """A human-readable location (endpoint or root directory) for messages; never credentials."""

    @abstractmethod
    def stat(self, uri: str) -> ObjectStat | None:
        """Size and ETag of the object, or None if it does not exist."""

    @abstractmethod
    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        """A streamed binary reader; close it (or use ``with``). Raises ObjectNotFound. ``size`` is the object's
        size when the caller knows it: a store may read a large object another way (S3 from a presigned URL)."""

    def read_bytes(self, uri: str) -> bytes:
        """The whole object in memory: meant for small metadata files (ranges, manifests)."""
        with self.open_read(uri) as stream:
            return stream.read()

    @abstractmethod
    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        """Store the bytes of ``stream`` under ``uri`` atomically, reading it chunk by chunk.

        If ``size`` is given and the stream delivers a different number of bytes, nothing is stored and
        SizeMismatchError is raised: this catches truncated source reads.
        """

    @abstractmethod
    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        """Store ``data`` under ``uri`` atomically. ``md5`` is the hex MD5 of ``data`` as the caller computed it
        from bytes it checked: a store that answers with the MD5 of what it stored (``answers_md5``) compares
        the two, and when they differ (the bytes were damaged on their way in) deletes the object and raises
        ChecksumMismatchError. Other stores do not use it."""

    @abstractmethod
    def delete(self, uri: str) -> None:
        """Remove the object; deleting an absent object is not an error (as in S3)."""

    @abstractmethod
    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Objects whose URI starts with ``uri_prefix`` (a string prefix, as in S3: end it with ``/``
        to list a "directory" only), in key order; with ``start_after`` (a URI of this store), only those
        whose URI sorts after it (S3's ``StartAfter``: a listing can begin mid-directory)."""

    def prepare_reads(self, uris: Sequence[str], sizes: Sequence[int | None] = ()) -> None:
        """A hint that these objects (of these ``sizes``, where known) will be read soon, so a store can fetch in
        bulk what their reads need (the lakeFS API source: presigned URLs, a page of a thousand in one request).
        Nothing by default."""
        return None

    def write_buffer_size(self, size: int) -> int:
        """The most bytes ``write_stream`` holds in memory at once for an object of ``size`` bytes: its part
        buffers (the parts being sent and the one being filled; the whole object below a store's multipart
        threshold). A transfer pool's byte budget reserves it for each streamed copy (``ByteBudget``)."""
        return min(size, self.chunk_size)

    def answers_md5(self, size: int) -> bool:
        """Whether ``write_stream`` of ``size`` bytes answers with the MD5 the store itself computed of the bytes it
        stored (S3 single PUTs without server-side encryption): then a copy may let the store check the bytes
        against lakeFS's MD5 instead of hashing them here (``transfer.copy_object``)."""
        return False

    def part_size(self, uri: str) -> int | None:
        """The size of the first part of an object stored in several parts, where the store can tell (S3
        answers a HEAD of part 1); None otherwise. Only ever a hint for checking a multipart checksum."""
        return None

    def same_endpoint_as(self, other: Blockstore) -> bool:
        """True if ``server_side_copy`` can copy from ``other``'s URIs into this store."""
        return False

    def server_side_copy(self, src_uri: str, dst_uri: str) -> ObjectStat:
        """Copy inside the storage service without moving bytes through this process."""
        raise StorageError(f"{type(self).__name__} does not support server-side copy", uri=src_uri)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


#: The methods timed as requests, and their operation class (the label a metric gets: no key, no URI).
_TIMED = {
    "stat": "head",
    "open_read": "get",
    "read_bytes": "get",
    "write_stream": "put",
    "write_bytes": "put",
    "delete": "delete",
    "server_side_copy": "copy",
    "list_prefix": "list",
}


class _Inside(threading.local):
    """How deep this thread is in timed calls (only the outermost is a request of its own)."""

    depth: int = 0


_inside = _Inside()


def store_label(store: Blockstore) -> str:
    """The store type a timed request is reported under: ``s3``, ``gcs``, ``azure``, ``local``, ... (a class's
    ``metrics_label`` when it sets one)."""
    return store.metrics_label or type(store).__name__.removesuffix("Blockstore").lower() or "store"


def _timed_method(method: Callable[..., Any], operation: str) -> Callable[..., Any]:
    """``method`` reporting each outermost call as one request (``list``: until its first result or its end, which
    is one page request; ``get``: until the stream is open)."""

    if operation == "list":

        @functools.wraps(method)
        def listing(self: Blockstore, *args: Any, **kwargs: Any) -> Iterator[ObjectInfo]:
            items = method(self, *args, **kwargs)
            if not observing() or _inside.depth:
                yield from items
                return
            with timed(store_label(self), operation):
                first = next(items, None)
            if first is not None:
                yield first
                yield from items

        listing._timed = True  # type: ignore[attr-defined]
        return listing

    @functools.wraps(method)
    def call(self: Blockstore, *args: Any, **kwargs: Any) -> Any:
        if not observing() or _inside.depth:
            return method(self, *args, **kwargs)
        _inside.depth = 1
        try:
            with timed(store_label(self), operation) as request:
                try:
                    return method(self, *args, **kwargs)
                except ObjectNotFound:
                    request.failed = False  # an answer: nothing there
                    raise
        finally:
            _inside.depth = 0

    call._timed = True  # type: ignore[attr-defined]
    return call
