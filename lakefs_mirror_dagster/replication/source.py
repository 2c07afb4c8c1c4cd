"""Where the engine reads a source repository's bytes from.

Two ways, one interface: through the source region's lakeFS API (no storage credentials, any pair of stores), or
directly from the source's object store when the config gives credentials (faster; server-side copies when both
sides share an S3 endpoint). Through the API, objects are read with URLs lakeFS presigns a page at a time, so
lakeFS stops being the bottleneck of a backfill (benchmarks/README.md, "Reads through URLs lakeFS presigns");
what cannot be presigned or reached is read through lakeFS. Bytes are checked against lakeFS's checksum either way.
"""

from __future__ import annotations

import http.client
import io
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

import urllib3

from ..lakefs import LakeFSClient, LakeFSError, LakeFSGone, LakeFSNotFound
from ..storage import (
    Blockstore,
    ObjectInfo,
    ObjectNotFound,
    ObjectStat,
    ReadableStream,
    StorageError,
    TransientStorageError,
    join_namespace,
)
from ..storage.plain_http import HttpConnections, HttpStatusError
from ..storage.streams import BodyReader
from .validation import metadata_uri

__all__ = ["PRESIGN_MIN_BYTES", "PRESIGN_MIN_OBJECTS", "ApiObjectReader", "RepositorySource", "SourceReader"]

log = logging.getLogger(__name__)

_LAKEFS_SCHEME = "lakefs"
#: Fewest objects of one range to read for which paging through presigned URLs pays: a page of a thousand
#: costs lakeFS about what eighty objects served one by one cost.
PRESIGN_MIN_OBJECTS = 200
#: Fewest bytes to read for which a page of presigned URLs pays however few objects hold them: lakeFS serving
#: 20 x 64 MiB cost it 0.9 s of CPU and the copier a hop through it (``benchmarks/backfill_vs_rclone.py``).
PRESIGN_MIN_BYTES = 64 * 1024 * 1024
#: A page holding fewer of the wanted objects than this ends the paging; the rest are read one by one.
_MIN_WANTED_PER_PAGE = 100
#: A presigned URL is not used this close to its expiry.
_EXPIRY_MARGIN_S = 60.0
#: After a presigned read failed, reads go through lakeFS for this long before presigning is tried again.
_PRESIGN_PAUSE_S = 600.0
#: Seconds to connect to the store behind a presigned URL: one that cannot be reached is given up on soon.
_PRESIGNED_CONNECT_TIMEOUT_S = 10.0


#: Longest a read waits for the page of presigned URLs that holds its object; then lakeFS serves it.
_PAGE_WAIT_S = 60.0


@dataclass(eq=False)
class _PageFetch:
    """Pages of presigned URLs being fetched for keys of one commit up to ``last`` (``want``: those to read);
    ``covered`` is the last key of the pages arrived so far."""

    repo: str
    ref: str
    last: str
    want: set[str]
    covered: str = ""

    def awaits(self, repo: str, ref: str, path: str) -> bool:
        """Whether a page still to come may hold ``path``'s URL."""
        return repo == self.repo and ref == self.ref and path in self.want and path > self.covered


class ApiObjectReader(Blockstore):
    """A read-only ``Blockstore`` over lakeFS's object API: ``lakefs://<repo>/<commit>/<path>`` URIs.

    It lets the transfer pool stream objects from a source it has no storage credentials for.
    """

    schemes = frozenset({_LAKEFS_SCHEME})
    #: Its reads are reported as store requests of this type (each also a lakeFS request).
    metrics_label = "lakefs_api"

    def __init__(self, client: LakeFSClient, *, read_timeout_s: float = 300.0) -> None:
        self._client = client
        self._lock = threading.Lock()
        #: Notified whenever a page of URLs arrives or a fetch ends (reads wait on it).
        self._changed = threading.Condition(self._lock)
        #: Presigned URL and the time it may be used until, by ``lakefs://`` URI; each is used once.
        self._presigned: dict[str, tuple[str, float]] = {}
        #: Fetches of pages still running (``prepare_reads``).
        self._fetches: list[_PageFetch] = []
        self._presign_paused_until = 0.0
        self._http = HttpConnections(connect_timeout_s=_PRESIGNED_CONNECT_TIMEOUT_S, read_timeout_s=read_timeout_s)

    @staticmethod
    def uri(repo: str, commit_id: str, path: str) -> str:
        return f"{_LAKEFS_SCHEME}://{repo}/{commit_id}/{path}"

    @staticmethod
    def _split(uri: str) -> tuple[str, str, str]:
        rest = uri.removeprefix(f"{_LAKEFS_SCHEME}://")
        repo, commit_id, path = rest.split("/", 2)
        return repo, commit_id, path

    def describe(self) -> str:
        return f"lakeFS API {self._client.endpoint}"

    def stat(self, uri: str) -> ObjectStat | None:
        repo, ref, path = self._split(uri)
        try:
            st = self._client.stat_object(repo, ref, path)
        except LakeFSNotFound:
            return None
        return ObjectStat(size=int(st.size_bytes or 0), etag=st.checksum)

    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        repo, ref, path = self._split(uri)
        with self._changed:  # a page still on its way may hold this object's URL: wait for it, boundedly
            deadline = time.monotonic() + _PAGE_WAIT_S
            while uri not in self._presigned and any(f.awaits(repo, ref, path) for f in self._fetches):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            presigned = self._presigned.pop(uri, None)
        if presigned is not None and time.time() < presigned[1]:
            stream = self._open_presigned(uri, presigned[0])
            if stream is not None:
                return stream
        try:
            resp = self._client.open_object(repo, ref, path)
        except (LakeFSNotFound, LakeFSGone) as exc:
            raise ObjectNotFound(f"{uri}: {exc}", uri=uri) from exc
        return cast(BinaryIO, _ResponseStream(resp, uri))

    def prepare_reads(self, uris: Sequence[str], sizes: Sequence[int | None] = ()) -> None:
        """Fetch presigned URLs for ``uris`` (sorted pages of the commit's listing), when there are enough of
        them (``PRESIGN_MIN_OBJECTS``) or of their bytes (``PRESIGN_MIN_BYTES``) for a page to pay and presigned
        reads work. The first page arrives before this returns; the rest arrive in the background while the first
        page's objects copy (a read waits for the page that holds its URL)."""
        if time.time() < self._presign_paused_until:
            return
        paths: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
        nbytes: defaultdict[tuple[str, str], int] = defaultdict(int)
        for i, uri in enumerate(uris):
            repo, ref, path = self._split(uri)
            paths[repo, ref].append(path)
            nbytes[repo, ref] += (sizes[i] if i < len(sizes) else None) or 0
        now = time.time()
        with self._lock:  # URLs of objects the pool found present need no read: drop them once expired
            self._presigned = {uri: url for uri, url in self._presigned.items() if url[1] > now}
        for (repo, ref), wanted in paths.items():
            if len(wanted) >= PRESIGN_MIN_OBJECTS or nbytes[repo, ref] >= PRESIGN_MIN_BYTES:
                wanted.sort()
                fetch = _PageFetch(repo, ref, last=wanted[-1], want=set(wanted))
                with self._lock:
                    self._fetches.append(fetch)
                # every page but the last holds _MIN_WANTED_PER_PAGE wanted keys: this bounds the pages
                pages = len(wanted) // _MIN_WANTED_PER_PAGE + 1
                after = self._fetch_page(fetch, after=wanted[0][:-1])  # a key's prefix sorts right before it
                if after is not None and pages > 1:
                    name = f"presigned-pages-{repo}"
                    threading.Thread(
                        target=self._fetch_pages, args=(fetch, after, pages - 1), name=name, daemon=True
                    ).start()

    def _fetch_pages(self, fetch: _PageFetch, after: str | None, pages: int) -> None:
        """Pages after ``after``, at most ``pages`` of them, then the fetch is done."""
        try:
            for _ in range(pages):
                if after is None:
                    return
                after = self._fetch_page(fetch, after=after)
        finally:
            self._end_fetch(fetch)

    def _fetch_page(self, fetch: _PageFetch, *, after: str) -> str | None:
        """One page of URLs into ``_presigned``; the key to go on after, or None when the fetch is over (ended)."""
        repo, ref = fetch.repo, fetch.ref
        if time.time() < self._presign_paused_until:  # a read or another page failed meanwhile
            self._end_fetch(fetch)
            return None
        try:
            page, more = self._client.presigned_addresses(repo, ref, after=after)
        except LakeFSError as exc:
            self._pause_presigning(f"lakeFS does not list {repo}@{ref} presigned ({exc})", level=logging.INFO)
            self._end_fetch(fetch)
            return None
        found: dict[str, tuple[str, float]] = {}
        hits = 0
        for path, url, expiry in page:
            if not url.startswith(("https://", "http://")):
                self._pause_presigning(f"lakeFS does not presign the store of {repo}", level=logging.INFO)
                self._end_fetch(fetch)
                return None
            if path in fetch.want:
                hits += 1
                until = float(expiry) - _EXPIRY_MARGIN_S if expiry else time.time() + _EXPIRY_MARGIN_S
                found[self.uri(repo, ref, path)] = (url, until)
        done = not more or not page or page[-1][0] >= fetch.last or hits < _MIN_WANTED_PER_PAGE
        with self._changed:
            self._presigned.update(found)
            fetch.covered = page[-1][0] if page else fetch.last
            self._changed.notify_all()
        if done:
            self._end_fetch(fetch)
            return None
        return page[-1][0]

    def _end_fetch(self, fetch: _PageFetch) -> None:
        with self._changed:
            if fetch in self._fetches:
                self._fetches.remove(fetch)
            self._changed.notify_all()

    def _open_presigned(self, uri: str, url: str) -> BinaryIO | None:
        """The object's bytes straight from its store, or None when that failed (then lakeFS serves it)."""
        try:
            body = self._http.get(url)
        except HttpStatusError as exc:
            self._pause_presigning(f"a presigned read of {uri} answered HTTP {exc.status}")
            return None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            self._pause_presigning(f"the store behind {uri} cannot be reached from here ({type(exc).__name__})")
            return None
        # a connection lost mid-body is transient: the transfer pool reads the object again, through lakeFS
        return cast(BinaryIO, BodyReader(body, lambda exc: _lost(uri, exc)))

    def _pause_presigning(self, why: str, *, level: int = logging.WARNING) -> None:
        """Read through lakeFS for a while, and say why (never with a URL: it carries a signature)."""
        with self._lock:
            already = time.time() < self._presign_paused_until
            self._presign_paused_until = time.time() + _PRESIGN_PAUSE_S
            self._presigned.clear()
        if not already:
            log.log(level, "%s: reading objects through lakeFS for the next %.0f minutes", why, _PRESIGN_PAUSE_S / 60)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        raise StorageError("the lakeFS API source is read-only", uri=uri)

    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        raise StorageError("the lakeFS API source is read-only", uri=uri)

    def delete(self, uri: str) -> None:
        raise StorageError("the lakeFS API source is read-only", uri=uri)

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        raise StorageError("listing is not supported through the lakeFS API source", uri=uri_prefix)


class _ResponseStream(io.RawIOBase):
    """A urllib3 streaming response as a closeable binary file; a connection lost mid-body is a transient
    storage error (the transfer pool reads the object again)."""

    def __init__(self, resp: Any, uri: str) -> None:
        self._resp = resp
        self._uri = uri

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        try:
            return bytes(self._resp.read(None if size is None or size < 0 else size))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransientStorageError(f"read {self._uri}: {type(exc).__name__}", uri=self._uri) from exc

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._resp.release_conn()
        super().close()


def _lost(uri: str, exc: Exception) -> TransientStorageError:
    return TransientStorageError(f"read {uri}: {type(exc).__name__}", uri=uri)


class SourceReader:
    """Reads one source repository's range files and objects: from its store when given, else through its
    lakeFS API. It is all a transfer needs, so a Spark task builds one for itself from plain settings."""

    def __init__(
        self,
        repository: str,
        storage_namespace: str | None,
        *,
        store: Blockstore | None = None,
        client: LakeFSClient | None = None,
    ) -> None:
        """``storage_namespace`` None: asked of the source's lakeFS (``client``) when first needed."""
        if store is None and client is None:
            raise ValueError("a source reader needs the source's store or its lakeFS client")
        if storage_namespace is None and client is None:
            raise ValueError("a source reader without the source's storage namespace needs its lakeFS client")
        self.repository = repository
        self._namespace = storage_namespace
        self._namespace_lock = threading.Lock()
        self.store = store
        self._api_client = client
        self._api_reader = ApiObjectReader(client) if client is not None else None

    @property
    def storage_namespace(self) -> str:
        """The source repository's storage namespace. Reads through the lakeFS API never need it, so a pass
        without ``source_stores`` does not pay a round trip across the link for it."""
        if self._namespace is None:
            with self._namespace_lock:
                if self._namespace is None:
                    assert self._api_client is not None
                    self._namespace = self._api_client.get_repository(self.repository).storage_namespace
        return self._namespace

    @property
    def mode(self) -> str:
        return "store" if self.store is not None else "api"

    def read_metadata(self, kind: str, file_id: str) -> bytes:
        """Bytes of a range (``kind='range'``) or metarange (``'meta_range'``) file."""
        if self.store is not None:
            return self.store.read_bytes(metadata_uri(self.storage_namespace, file_id))
        assert self._api_client is not None
        return self._api_client.get_metadata_object(self.repository, kind, file_id)

    def namespace_uri(self, address: str) -> str:
        """Where the source's store keeps a relative-address object; a mirror keeps its copy at the same
        ``address`` under its own namespace."""
        return join_namespace(self.storage_namespace, address)

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        """Store and URI to read one relative-address object from."""
        if self.store is not None:
            return self.store, self.namespace_uri(address)
        assert self._api_reader is not None
        return self._api_reader, ApiObjectReader.uri(self.repository, commit_id, key)


class RepositorySource(SourceReader):
    """One source repository as the engine sees it: a ``SourceReader`` plus the lakeFS client it plans with."""

    def __init__(
        self,
        client: LakeFSClient,
        repository: str,
        storage_namespace: str | None,
        *,
        store: Blockstore | None = None,
    ) -> None:
        super().__init__(repository, storage_namespace, store=store, client=client)
        self.client = client
