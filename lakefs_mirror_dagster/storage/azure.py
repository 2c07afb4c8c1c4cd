"""A blockstore on Azure Blob Storage: object bytes through obstore (``native``), the rest through the official
``azure-storage-blob`` SDK.

URIs are the ones lakeFS writes (``https://<account>.blob.core.windows.net/<container>/<path>``, or under an
``endpoint`` such as Azurite's). GET, Put Blob, Put Block (List) and Get Blob Properties are signed by obstore in
Rust with the GIL released; listings by string prefix, deletes and container calls stay on the SDK. Writes are
all-or-nothing: larger objects are staged block by block and appear only when the block list is committed.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import azure.core.exceptions as aexc
from azure.storage.blob import BlobServiceClient

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
from .native import UPLOAD_PARTS_HELD, ErrorResponse, NativeRequests
from .streams import BodyReader, CheckedParts, strip_etag, whole_or_head

if TYPE_CHECKING:
    from obstore.store import AzureConfig, ClientConfig

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
    if isinstance(exc, ErrorResponse):  # obstore's answer (``native``)
        return _by_answer(exc.status, exc.code, operation, uri, at)
    if isinstance(exc, aexc.HttpResponseError):
        raw_code = getattr(exc, "error_code", None) or ""
        code = str(getattr(raw_code, "value", raw_code))
        status = 403 if isinstance(exc, aexc.ClientAuthenticationError) else exc.status_code
        return _by_answer(status, code, operation, uri, at)
    return StorageError(f"{operation} {uri}: {type(exc).__name__}: {exc}", uri=uri)


def _by_answer(status: int | None, code: str, operation: str, uri: str, at: str) -> StorageError:
    """The storage error for an answer's HTTP status and Azure error code (whichever client got it)."""
    detail = code or f"HTTP {status}"
    if code in _CONTAINER_CODES:
        return BucketNotFound(f"{operation} {uri}: container does not exist{at}", uri=uri)
    if status == 404:
        return ObjectNotFound(f"{operation} {uri}: no such object{at}", uri=uri)
    if status in (401, 403):
        return StorageAccessError(f"{operation} {uri}: access denied{at} ({detail})", uri=uri)
    if status in (408, 429) or (isinstance(status, int) and status >= 500):
        return TransientStorageError(f"{operation} {uri}: temporary failure{at} ({detail})", uri=uri)
    return StorageError(f"{operation} {uri}: {detail}{at} (HTTP {status})", uri=uri)


class _Location:
    """Where a URI points: the URI's own base (kept for listings), container and blob name."""

    __slots__ = ("base", "blob", "container")

    def __init__(self, base: str, container: str, blob: str) -> None:
        self.base = base
        self.container = container
        self.blob = blob


class _NativeAzureRequests(NativeRequests):
    """obstore Azure stores, one per container, signed with the account key."""

    def __init__(self, account: str, key: str, account_url: str, timeout_s: float) -> None:
        super().__init__()
        self._config: AzureConfig = {"account_name": account, "account_key": key, "endpoint": account_url}
        self._client_options: ClientConfig = {
            "allow_http": True,
            "connect_timeout": timedelta(seconds=30),
            # object_store's timeout covers a whole request, body included: a slow big GET needs room
            "timeout": timedelta(seconds=max(timeout_s, 3600.0)),
        }

    def _new_store(self, bucket: str, *, for_parts: bool = False) -> Any:
        from obstore.store import AzureStore

        return AzureStore(bucket, config=self._config, client_options=self._client_options)


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
        #: listings, deletes and container calls
        self._client = BlobServiceClient(
            self.account_url,
            credential={"account_name": storage_account, "account_key": storage_access_key},
            connection_timeout=30,
            read_timeout=timeout_s,
        )
        self._native = _NativeAzureRequests(storage_account, storage_access_key, self.account_url, timeout_s)
        self._known_containers: set[str] = set()
        self._lock = threading.Lock()

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

    # -- reads -------------------------------------------------------------------------------------

    def _check_container(self, container: str, uri: str) -> None:
        """Raise BucketNotFound if the container is missing: a 404 HEAD carries no error code to tell."""
        if container in self._known_containers:
            return
        try:
            self._client.get_container_client(container).get_container_properties()
        except Exception as exc:
            error = self._error(exc, "stat", uri)
            if type(error) is ObjectNotFound:
                raise BucketNotFound(f"stat {uri}: container does not exist at {self._where()}", uri=uri) from exc
            raise error from exc
        with self._lock:
            self._known_containers.add(container)

    def stat(self, uri: str) -> ObjectStat | None:
        loc = self._locate(uri)
        try:
            stat = self._native.head(loc.container, loc.blob)
        except Exception as exc:
            raise self._error(exc, "stat", uri) from exc
        if stat is None:
            self._check_container(loc.container, uri)
        return stat

    def _body_reader(self, uri: str) -> BodyReader:
        loc = self._locate(uri)
        try:
            body = self._native.get(loc.container, loc.blob)
        except Exception as exc:
            raise self._error(exc, "read", uri) from exc
        return BodyReader(body, lambda exc: self._error(exc, "read", uri))

    def open_read(self, uri: str, *, size: int | None = None) -> io.BufferedReader:
        return io.BufferedReader(self._body_reader(uri), buffer_size=min(self.chunk_size, MiB))

    def read_bytes(self, uri: str) -> bytes:
        with self._body_reader(uri) as raw:
            return raw.readall()

    # -- writes ------------------------------------------------------------------------------------

    def _block_size(self, size: int | None) -> int:
        if size is None:
            return self.multipart_chunk_size
        needed = math.ceil(size / MAX_BLOCKS)
        if needed <= self.multipart_chunk_size:
            return self.multipart_chunk_size
        return math.ceil(needed / MiB) * MiB

    def write_buffer_size(self, size: int) -> int:
        return size + 1 if size < self.multipart_threshold else self._block_size(size) * UPLOAD_PARTS_HELD

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        loc = self._locate(uri)
        data, whole = whole_or_head(uri, stream, size, self.multipart_threshold)
        if whole:
            return self._put(loc, uri, data)
        blocks = CheckedParts(uri, data, stream, self._block_size(size), size, max_parts=MAX_BLOCKS)
        try:
            etag = self._native.upload(loc.container, loc.blob, blocks, blocks.part_size)
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=blocks.written, etag=etag)

    def _put(self, loc: _Location, uri: str, data: bytes | bytearray) -> ObjectStat:
        try:
            etag = self._native.put(loc.container, loc.blob, data)
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=len(data), etag=etag)

    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        if len(data) < self.multipart_threshold:
            return self._put(self._locate(uri), uri, data)
        return self.write_stream(uri, io.BytesIO(data), len(data))

    def delete(self, uri: str) -> None:
        loc = self._locate(uri)
        try:
            self._client.get_blob_client(loc.container, loc.blob).delete_blob(delete_snapshots="include")
        except Exception as exc:
            error = self._error(exc, "delete", uri)
            if type(error) is ObjectNotFound:
                return
            raise error from exc

    # -- listing -----------------------------------------------------------------------------------

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        """Objects under ``<base>/<container>/<prefix>``; the container must be named in full. Azure has no
        StartAfter: ``start_after`` skips the objects before it here."""
        loc = self._locate(uri_prefix, object_key=False)
        container = self._client.get_container_client(loc.container)
        try:
            for item in container.list_blobs(name_starts_with=loc.blob or None):
                uri = f"{loc.base}/{loc.container}/{item.name}"
                if start_after is None or uri > start_after:
                    yield ObjectInfo(uri=uri, size=int(item.size), etag=strip_etag(item.etag))
        except Exception as exc:
            raise self._error(exc, "list", uri_prefix) from exc
