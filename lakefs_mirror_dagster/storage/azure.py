"""A blockstore on Azure Blob Storage, through the official ``azure-storage-blob`` SDK.

URIs are the ones lakeFS writes for Azure, ``https://<account>.blob.core.windows.net/<container>/<path>``
(another ``domain`` for sovereign clouds). With an ``endpoint`` (lakeFS's ``test_endpoint_url``: the
account URL, e.g. Azurite's ``http://127.0.0.1:10000/devstoreaccount1``; without a path the account is
appended), requests go there instead, and URIs under it
(``http://127.0.0.1:<port>/<account>/<container>/<path>``) are accepted too. Listings answer in the form
of the listed prefix.

Writes are all-or-nothing: small objects are one Put Blob; larger ones are staged block by block (memory
bounded by one block) and appear only when the block list is committed. A failed write commits nothing;
Azure discards uncommitted blocks by itself.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

import azure.core.exceptions as aexc
from azure.storage.blob import BlobBlock, BlobClient, BlobServiceClient

from .base import Blockstore, ObjectInfo, ObjectStat, ReadableStream
from .errors import (
    BucketNotFound,
    InvalidStorageURI,
    ObjectNotFound,
    StorageAccessError,
    StorageConfigError,
    StorageError,
    TransientStorageError,
)
from .streams import read_exact, size_mismatch, strip_etag

__all__ = ["DEFAULT_AZURE_DOMAIN", "AzureBlockstore", "map_azure_error"]

MiB = 1024 * 1024
DEFAULT_AZURE_DOMAIN = "blob.core.windows.net"
DEFAULT_MULTIPART_THRESHOLD = 16 * MiB
DEFAULT_MULTIPART_CHUNK_SIZE = 8 * MiB
#: Azure's limits for one block blob.
MAX_BLOCKS = 50_000
MAX_BLOCK_SIZE = 4000 * MiB

_ACCOUNT_RE = re.compile(r"[a-z0-9]{3,24}")
_CONTAINER_CODES = frozenset({"ContainerNotFound", "ContainerBeingDeleted"})
_TRANSIENT_ERRORS = (
    aexc.ServiceRequestError,
    aexc.ServiceResponseError,
    aexc.IncompleteReadError,
    aexc.ResourceModifiedError,  # the object changed during a multi-request read: read again
    ConnectionError,
    TimeoutError,
)


def map_azure_error(exc: BaseException, operation: str, uri: str, where: str = "") -> StorageError:
    """Map an azure-core / azure-storage-blob error to the storage hierarchy.

    Only the status and the service's error code are used: Azure's authentication errors quote the
    request's string-to-sign, which is not copied.
    """
    at = f" at {where}" if where else ""
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, _TRANSIENT_ERRORS):
        return TransientStorageError(f"{operation} {uri}: temporary failure{at} ({type(exc).__name__})", uri=uri)
    if isinstance(exc, aexc.HttpResponseError):
        status = exc.status_code
        raw_code = getattr(exc, "error_code", None) or ""
        code = str(getattr(raw_code, "value", raw_code))
        detail = code or f"HTTP {status}"
        if code in _CONTAINER_CODES:
            return BucketNotFound(f"{operation} {uri}: container does not exist{at}", uri=uri)
        if status == 404:
            return ObjectNotFound(f"{operation} {uri}: no such object{at}", uri=uri)
        if status in (401, 403) or isinstance(exc, aexc.ClientAuthenticationError):
            return StorageAccessError(f"{operation} {uri}: access denied{at} ({detail})", uri=uri)
        if status in (408, 429) or (isinstance(status, int) and status >= 500):
            return TransientStorageError(f"{operation} {uri}: temporary failure{at} ({detail})", uri=uri)
        return StorageError(f"{operation} {uri}: {detail}{at} (HTTP {status})", uri=uri)
    return StorageError(f"{operation} {uri}: {type(exc).__name__}: {exc}", uri=uri)


class _DownloadReader(io.RawIOBase):
    """Raw stream over a StorageStreamDownloader (chunked GETs pinned to the first response's ETag)."""

    def __init__(self, downloader: Any, uri: str, where: str) -> None:
        super().__init__()
        self._downloader = downloader
        self._uri = uri
        self._where = where

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if len(buffer) == 0:
            return 0
        try:
            data = self._downloader.read(len(buffer))
        except Exception as exc:
            raise map_azure_error(exc, "read", self._uri, self._where) from exc
        n = len(data)
        buffer[:n] = data
        return n


class _Location:
    """Where a URI points: the URI's own base (kept for listings), container and blob name."""

    __slots__ = ("base", "blob", "container")

    def __init__(self, base: str, container: str, blob: str) -> None:
        self.base = base
        self.container = container
        self.blob = blob


class AzureBlockstore(Blockstore):
    """Azure Blob Storage (or Azurite) for one storage account, authenticated with the account key."""

    schemes: ClassVar[frozenset[str]] = frozenset({"https", "http"})

    def __init__(
        self,
        *,
        storage_account: str,
        storage_access_key: str,
        domain: str = DEFAULT_AZURE_DOMAIN,
        endpoint: str | None = None,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunk_size: int = DEFAULT_MULTIPART_CHUNK_SIZE,
        timeout_s: float = 600.0,
    ) -> None:
        if not storage_account:
            raise StorageConfigError("azure blockstore: storage_account is required")
        if not _ACCOUNT_RE.fullmatch(storage_account):
            raise StorageConfigError(
                f"azure blockstore: storage_account {storage_account!r} must be 3 to 24 lowercase letters and digits"
            )
        if not storage_access_key:
            raise StorageConfigError(
                "azure blockstore: storage_access_key is required (this blockstore authenticates with the account key)"
            )
        try:
            base64.b64decode(storage_access_key, validate=True)
        except (binascii.Error, ValueError):
            raise StorageConfigError("azure blockstore: storage_access_key is not a base64 account key") from None
        domain = (domain or DEFAULT_AZURE_DOMAIN).strip().strip(".").lower()
        if not domain or "/" in domain or ":" in domain:
            raise StorageConfigError(
                f"azure blockstore: domain {domain!r} must be a host suffix like {DEFAULT_AZURE_DOMAIN}"
            )
        if endpoint:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
                raise StorageConfigError(
                    f"azure blockstore: endpoint {endpoint!r} must be an http:// or https:// URL with a host"
                )
        if multipart_chunk_size < 1 or multipart_chunk_size > MAX_BLOCK_SIZE:
            raise StorageConfigError(
                f"azure blockstore: multipart_chunk_size must be between 1 and {MAX_BLOCK_SIZE}, "
                f"got {multipart_chunk_size}"
            )
        if multipart_threshold < 1:
            raise StorageConfigError(
                f"azure blockstore: multipart_threshold must be positive, got {multipart_threshold}"
            )
        self.storage_account = storage_account
        self.domain = domain
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self.multipart_threshold = multipart_threshold
        self.multipart_chunk_size = multipart_chunk_size
        self.chunk_size = multipart_chunk_size
        #: The canonical URI base lakeFS uses for this account.
        self.public_base = f"https://{storage_account}.{domain}"
        #: Where requests go. lakeFS's ``test_endpoint_url`` is the account URL (Azurite:
        #: ``http://127.0.0.1:10000/devstoreaccount1``); an endpoint without a path gets the account appended.
        self.account_url = self.public_base
        if self.endpoint:
            has_path = bool(urlsplit(self.endpoint).path.strip("/"))
            self.account_url = self.endpoint if has_path else f"{self.endpoint}/{storage_account}"
        self._client = BlobServiceClient(
            self.account_url,
            credential={"account_name": storage_account, "account_key": storage_access_key},
            max_single_put_size=max(multipart_threshold, 1),
            max_block_size=multipart_chunk_size,
            max_single_get_size=multipart_chunk_size,
            max_chunk_get_size=multipart_chunk_size,
            connection_timeout=30,
            read_timeout=timeout_s,
        )

    @property
    def client(self) -> BlobServiceClient:
        """The underlying ``BlobServiceClient``, for operations outside the blockstore interface."""
        return self._client

    def describe(self) -> str:
        where = self.endpoint or self.public_base
        return f"Azure Blob account {self.storage_account} at {where}"

    def _where(self) -> str:
        return self.endpoint or self.public_base

    def _error(self, exc: BaseException, operation: str, uri: str) -> StorageError:
        return map_azure_error(exc, operation, uri, self._where())

    def serves_uri(self, uri: str) -> bool:
        """True if ``uri`` names an object of this account (used to pick among several azure stores)."""
        try:
            self._locate(uri, object_key=False)
        except InvalidStorageURI:
            return False
        return True

    def _bases(self) -> list[str]:
        bases = [self.public_base]
        if self.endpoint:
            bases.append(self.account_url)
        return bases

    def _locate(self, uri: str, *, object_key: bool = True) -> _Location:
        if not isinstance(uri, str):
            raise InvalidStorageURI(f"storage URI must be a string, got {type(uri).__name__}")
        for base in self._bases():
            if uri[: len(base) + 1].lower() == base.lower() + "/":
                rest = uri[len(base) + 1 :]
                break
        else:
            forms = " or ".join(f"{b}/<container>/<path>" for b in self._bases())
            raise InvalidStorageURI(
                f"{uri}: not in Azure storage account {self.storage_account} (expected {forms})", uri=uri
            )
        container, sep, blob = rest.partition("/")
        if not container or (object_key and (not sep or not blob or blob.endswith("/"))):
            what = "container" if not container else "object"
            raise InvalidStorageURI(f"{uri}: names no {what} (expected {base}/<container>/<path>)", uri=uri)
        return _Location(uri[: len(base)], container, blob)

    def _blob_client(self, loc: _Location) -> BlobClient:
        return self._client.get_blob_client(loc.container, loc.blob)

    # -- reads -------------------------------------------------------------------------------------

    def stat(self, uri: str) -> ObjectStat | None:
        loc = self._locate(uri)
        try:
            props = self._blob_client(loc).get_blob_properties()
        except Exception as exc:
            error = self._error(exc, "stat", uri)
            if type(error) is ObjectNotFound:
                return None
            raise error from exc
        return ObjectStat(size=int(props.size), etag=strip_etag(props.etag))

    def _download(self, uri: str) -> Any:
        loc = self._locate(uri)
        try:
            return self._blob_client(loc).download_blob(max_concurrency=1)
        except Exception as exc:
            raise self._error(exc, "read", uri) from exc

    def open_read(self, uri: str) -> io.BufferedReader:
        raw = _DownloadReader(self._download(uri), uri, self._where())
        return io.BufferedReader(raw, buffer_size=min(self.chunk_size, MiB))

    def read_bytes(self, uri: str) -> bytes:
        downloader = self._download(uri)
        try:
            return bytes(downloader.readall())
        except Exception as exc:
            raise self._error(exc, "read", uri) from exc

    # -- writes ------------------------------------------------------------------------------------

    def _block_size(self, size: int | None) -> int:
        if size is None:
            return self.multipart_chunk_size
        needed = math.ceil(size / MAX_BLOCKS)
        if needed <= self.multipart_chunk_size:
            return self.multipart_chunk_size
        return math.ceil(needed / MiB) * MiB

    def write_buffer_size(self, size: int) -> int:
        return size + 1 if size < self.multipart_threshold else self._block_size(size)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        loc = self._locate(uri)
        if size is not None and size < 0:
            raise ValueError(f"write {uri}: size must not be negative, got {size}")
        if size is not None and size < self.multipart_threshold:
            data = read_exact(stream, size + 1)
            if len(data) != size:
                raise size_mismatch(uri, size, len(data) if len(data) < size else None)
            return self._put(loc, uri, data)
        head = b""
        if size is None:
            head = read_exact(stream, self.multipart_threshold)
            if len(head) < self.multipart_threshold:
                return self._put(loc, uri, head)
        return self._staged_upload(loc, uri, head, stream, size)

    def _put(self, loc: _Location, uri: str, data: bytes) -> ObjectStat:
        try:
            result = self._blob_client(loc).upload_blob(
                data, length=len(data), overwrite=True, blob_type="BlockBlob", max_concurrency=1
            )
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=len(data), etag=strip_etag(str(result.get("etag") or "")))

    def _staged_upload(
        self, loc: _Location, uri: str, head: bytes, stream: ReadableStream, size: int | None
    ) -> ObjectStat:
        block_size = self._block_size(size)
        client = self._blob_client(loc)
        # A per-upload prefix keeps concurrent writers of the same name from committing each other's blocks;
        # all ids of one blob must have the same length.
        token = uuid.uuid4().hex
        blocks: list[BlobBlock] = []
        written = 0
        pending = head
        try:
            while True:
                want = block_size
                if size is not None:
                    want = min(block_size, size - written)
                part = pending[:want]
                pending = pending[want:]
                if len(part) < want:
                    part += read_exact(stream, want - len(part))
                if size is not None and want == 0:
                    if pending or stream.read(1):
                        raise size_mismatch(uri, size, None)
                    break
                if not part:
                    break
                if size is not None and len(part) < want:
                    raise size_mismatch(uri, size, written + len(part))
                if len(blocks) >= MAX_BLOCKS:
                    raise StorageError(
                        f"write {uri}: object needs more than {MAX_BLOCKS} blocks of {block_size} bytes; "
                        "pass its size or raise multipart_chunk_size",
                        uri=uri,
                    )
                block_id = base64.b64encode(f"{token}-{len(blocks):06d}".encode()).decode()
                client.stage_block(block_id, part, length=len(part))
                blocks.append(BlobBlock(block_id=block_id))
                written += len(part)
                if size is None and len(part) < block_size:
                    break
            result = client.commit_block_list(blocks)
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=written, etag=strip_etag(str(result.get("etag") or "")))

    def write_bytes(self, uri: str, data: bytes) -> ObjectStat:
        if len(data) < self.multipart_threshold:
            return self._put(self._locate(uri), uri, bytes(data))
        return self.write_stream(uri, io.BytesIO(data), len(data))

    def delete(self, uri: str) -> None:
        loc = self._locate(uri)
        try:
            self._blob_client(loc).delete_blob(delete_snapshots="include")
        except Exception as exc:
            error = self._error(exc, "delete", uri)
            if type(error) is ObjectNotFound:
                return
            raise error from exc

    # -- listing -----------------------------------------------------------------------------------

    def list_prefix(self, uri_prefix: str) -> Iterator[ObjectInfo]:
        """Objects under ``<base>/<container>/<prefix>``; the container must be named in full."""
        loc = self._locate(uri_prefix, object_key=False)
        container = self._client.get_container_client(loc.container)
        try:
            for item in container.list_blobs(name_starts_with=loc.blob or None):
                yield ObjectInfo(
                    uri=f"{loc.base}/{loc.container}/{item.name}",
                    size=int(item.size),
                    etag=strip_etag(item.etag),
                )
        except Exception as exc:
            raise self._error(exc, "list", uri_prefix) from exc
