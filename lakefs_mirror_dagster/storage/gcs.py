"""A blockstore on Google Cloud Storage (``gs://bucket/key``), through the official ``google-cloud-storage`` SDK.

Writes are all-or-nothing because GCS only creates an object when an upload is finalised: small objects
go up in one request, larger ones through a resumable upload sent chunk by chunk (memory stays bounded by
one chunk); if the source fails or delivers the wrong number of bytes, the upload is never finalised.
Reads fetch ranges of a pinned object generation, so a concurrent overwrite never mixes two versions.
"""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

import google.api_core.exceptions as gexc
import google.auth
import google.auth.exceptions
import google.oauth2.credentials
import requests.exceptions
import urllib3.exceptions
from google.auth.credentials import AnonymousCredentials, Credentials
from google.cloud import storage  # type: ignore[import-untyped]
from google.cloud.storage.exceptions import DataCorruption, InvalidResponse  # type: ignore[import-untyped]
from google.oauth2 import service_account

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
from .streams import read_exact, size_mismatch, whole_or_head
from .uri import parse_uri

__all__ = ["GCS_CHUNK_ALIGNMENT", "GCSBlockstore", "map_gcs_error"]

MiB = 1024 * 1024
#: GCS requires resumable-upload chunks to be multiples of 256 KiB.
GCS_CHUNK_ALIGNMENT = 256 * 1024
DEFAULT_MULTIPART_THRESHOLD = 16 * MiB
DEFAULT_MULTIPART_CHUNK_SIZE = 8 * MiB
_SCOPES = ("https://www.googleapis.com/auth/devstorage.read_write",)

_TRANSIENT_ERRORS = (
    gexc.TooManyRequests,
    gexc.ServerError,
    gexc.RetryError,
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
    requests.exceptions.ChunkedEncodingError,
    urllib3.exceptions.HTTPError,
    ConnectionError,
    TimeoutError,
    DataCorruption,
    google.auth.exceptions.TransportError,
)


def map_gcs_error(exc: BaseException, operation: str, uri: str, where: str = "") -> StorageError:
    """Map a google-cloud-storage / google-auth / requests error to the storage hierarchy.

    Only the status and the service's message are used; they never carry credentials.
    """
    at = f" at {where}" if where else ""
    if isinstance(exc, StorageError):
        return exc
    status: int | None = None
    detail = str(exc)
    if isinstance(exc, gexc.GoogleAPICallError):
        status = exc.code if isinstance(exc.code, int) else None
        detail = exc.message or f"HTTP {status}"
    elif isinstance(exc, InvalidResponse):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        detail = f"HTTP {status}"
    if status == 404:
        return ObjectNotFound(f"{operation} {uri}: no such object{at}", uri=uri)
    if status in (401, 403) or isinstance(
        exc, google.auth.exceptions.DefaultCredentialsError | google.auth.exceptions.RefreshError
    ):
        return StorageAccessError(f"{operation} {uri}: access denied{at} ({detail})", uri=uri)
    if status == 429 or (status is not None and status >= 500) or isinstance(exc, _TRANSIENT_ERRORS):
        return TransientStorageError(f"{operation} {uri}: temporary failure{at} ({detail})", uri=uri)
    if status is not None:
        return StorageError(f"{operation} {uri}: {detail}{at} (HTTP {status})", uri=uri)
    return StorageError(f"{operation} {uri}: {type(exc).__name__}: {exc}", uri=uri)


class _UploadSource(io.RawIOBase):
    """What the resumable upload reads: ``head`` then ``stream``, with ``tell()`` and a size check.

    The check happens while the last chunk is read, i.e. before the upload is finalised, so a short or
    long source never becomes an object.
    """

    def __init__(self, uri: str, head: bytes, stream: ReadableStream, size: int | None) -> None:
        super().__init__()
        self._uri = uri
        self._head = head
        self._stream = stream
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1, /) -> bytes:
        if size is None or size < 0:
            raise ValueError("unbounded reads are not supported")
        if self._size is not None:
            size = min(size, self._size - self._pos)
        out = b""
        if self._head:
            out, self._head = self._head[:size], self._head[size:]
        if len(out) < size:
            out += read_exact(self._stream, size - len(out))
        self._pos += len(out)
        if self._size is not None:
            if len(out) < size:
                raise size_mismatch(self._uri, self._size, self._pos)
            if self._pos == self._size and (self._head or self._stream.read(1)):
                raise size_mismatch(self._uri, self._size, None)
        return out

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _RangeReader(io.RawIOBase):
    """Streams one object generation by ranged GETs of ``chunk_size`` bytes."""

    def __init__(self, blob: Any, size: int, chunk_size: int, uri: str, where: str) -> None:
        super().__init__()
        self._blob = blob
        self._size = size
        self._chunk_size = chunk_size
        self._uri = uri
        self._where = where
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._pos >= self._size or len(buffer) == 0:
            return 0
        end = min(self._pos + min(len(buffer), self._chunk_size), self._size) - 1
        try:
            data = self._blob.download_as_bytes(start=self._pos, end=end, checksum=None, raw_download=True)
        except Exception as exc:
            raise map_gcs_error(exc, "read", self._uri, self._where) from exc
        if not data:
            raise TransientStorageError(f"read {self._uri}: object ended early{self._where}", uri=self._uri)
        n = len(data)
        buffer[:n] = data
        self._pos += n
        return n


class GCSBlockstore(Blockstore):
    """Google Cloud Storage, or an emulator such as fake-gcs-server; one lazily built, thread-safe client."""

    schemes: ClassVar[frozenset[str]] = frozenset({"gs"})

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        credentials_json: str | None = None,
        credentials_file: str | None = None,
        project: str | None = None,
        kms_key_name: str | None = None,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunk_size: int = DEFAULT_MULTIPART_CHUNK_SIZE,
    ) -> None:
        if endpoint:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise StorageConfigError(
                    f"gs blockstore: endpoint {endpoint!r} must be an http:// or https:// URL with a host"
                )
        if credentials_json and credentials_file:
            raise StorageConfigError("gs blockstore: give credentials_json or credentials_file, not both")
        if multipart_chunk_size < GCS_CHUNK_ALIGNMENT or multipart_chunk_size % GCS_CHUNK_ALIGNMENT:
            raise StorageConfigError(
                f"gs blockstore: multipart_chunk_size {multipart_chunk_size} must be a positive multiple of "
                f"{GCS_CHUNK_ALIGNMENT} (256 KiB), as GCS resumable uploads require"
            )
        if multipart_threshold < 1:
            raise StorageConfigError(f"gs blockstore: multipart_threshold must be positive, got {multipart_threshold}")
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self.multipart_threshold = multipart_threshold
        self.multipart_chunk_size = multipart_chunk_size
        self.chunk_size = multipart_chunk_size
        self.kms_key_name = kms_key_name or None
        self._credentials: Credentials | None = None
        self._project = project or None
        if credentials_json:
            self._credentials, found = self._load_json(credentials_json, "credentials_json")
            self._project = self._project or found
        elif credentials_file:
            try:
                with open(credentials_file, encoding="utf-8") as key_file:
                    text = key_file.read()
            except (OSError, UnicodeDecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
                raise StorageConfigError(
                    f"gs blockstore: cannot read credentials_file {credentials_file}: {why}"
                ) from None
            self._credentials, found = self._load_json(text, f"credentials_file {credentials_file}")
            self._project = self._project or found
        elif self.endpoint:
            self._credentials = AnonymousCredentials()
        self._client: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def _load_json(text: str, what: str) -> tuple[Credentials, str | None]:
        """A service-account or authorized-user key; never quotes the JSON (it holds a private key).

        Only these two types are accepted: loading arbitrary credential configurations (external accounts
        that run executables or fetch URLs) from a config file is what google-auth warns against.
        """
        try:
            info = json.loads(text)
        except ValueError as exc:
            raise StorageConfigError(
                f"gs blockstore: {what} is not valid JSON (line {getattr(exc, 'lineno', '?')})"
            ) from None
        if not isinstance(info, dict):
            raise StorageConfigError(f"gs blockstore: {what} must be a JSON object (a service account key)")
        kind = info.get("type")
        try:
            if kind == "service_account":
                sa = service_account.Credentials.from_service_account_info(info, scopes=_SCOPES)
                return sa, info.get("project_id")
            if kind == "authorized_user":
                user = google.oauth2.credentials.Credentials.from_authorized_user_info(info, scopes=_SCOPES)
                return user, info.get("quota_project_id")
        except (ValueError, KeyError, google.auth.exceptions.GoogleAuthError) as exc:
            raise StorageConfigError(
                f"gs blockstore: {what} (type {kind!r}) is not a usable Google credential: {type(exc).__name__}"
            ) from None
        raise StorageConfigError(
            f"gs blockstore: {what} has type {kind!r}; expected 'service_account' or 'authorized_user'"
        )

    @property
    def client(self) -> Any:
        """The ``google.cloud.storage.Client``; built on first use so that building a store needs no network."""
        with self._lock:
            if self._client is None:
                options = {"api_endpoint": self.endpoint} if self.endpoint else None
                try:
                    if self._credentials is None:
                        creds, found = google.auth.default(scopes=_SCOPES)
                        self._credentials, self._project = creds, self._project or found
                    self._client = storage.Client(
                        project=self._project,
                        credentials=self._credentials,
                        client_options=options,
                    )
                except google.auth.exceptions.DefaultCredentialsError as exc:
                    raise StorageAccessError(
                        "gs blockstore: no usable Google credentials: set gs.credentials_json or "
                        f"gs.credentials_file, or configure application default credentials ({exc})"
                    ) from exc
            return self._client

    def describe(self) -> str:
        return f"GCS endpoint {self.endpoint or 'https://storage.googleapis.com'}"

    def _where(self) -> str:
        return self.endpoint or "GCS"

    def _error(self, exc: BaseException, operation: str, uri: str) -> StorageError:
        return map_gcs_error(exc, operation, uri, self._where())

    def _split(self, uri: str, *, object_key: bool = True) -> tuple[str, str]:
        parsed = parse_uri(uri)
        if parsed.scheme != "gs":
            raise InvalidStorageURI(f"{uri}: GCS blockstore only serves gs:// URIs", uri=uri)
        if object_key and (not parsed.key or parsed.key.endswith("/")):
            raise InvalidStorageURI(f"{uri}: names no object (expected gs://bucket/key)", uri=uri)
        return parsed.bucket, parsed.key

    def _blob(self, uri: str, generation: int | None = None) -> Any:
        bucket, key = self._split(uri)
        return self.client.bucket(bucket).blob(
            key, generation=generation, chunk_size=self.multipart_chunk_size, kms_key_name=self.kms_key_name
        )

    def _missing(self, uri: str, operation: str) -> ObjectNotFound:
        """Tell a missing bucket from a missing object (GCS answers 404 to both)."""
        bucket = parse_uri(uri).bucket
        try:
            exists = self.client.bucket(bucket).exists()
        except Exception as exc:
            raise self._error(exc, operation, uri) from exc
        if not exists:
            return BucketNotFound(f"{operation} {uri}: bucket '{bucket}' does not exist at {self._where()}", uri=uri)
        return ObjectNotFound(f"{operation} {uri}: no such object at {self._where()}", uri=uri)

    # -- reads -------------------------------------------------------------------------------------

    def _get(self, uri: str, operation: str) -> Any:
        bucket, key = self._split(uri)
        try:
            blob = self.client.bucket(bucket).get_blob(key)
        except Exception as exc:
            raise self._error(exc, operation, uri) from exc
        if blob is None:
            missing = self._missing(uri, operation)
            if isinstance(missing, BucketNotFound) or operation != "stat":
                raise missing
        return blob

    def stat(self, uri: str) -> ObjectStat | None:
        blob = self._get(uri, "stat")
        if blob is None:
            return None
        return ObjectStat(size=int(blob.size or 0), etag=blob.etag)

    def open_read(self, uri: str, *, size: int | None = None) -> io.BufferedReader:
        blob = self._get(uri, "read")
        pinned = self._blob(uri, generation=blob.generation)
        raw = _RangeReader(pinned, int(blob.size or 0), self.chunk_size, uri, f" at {self._where()}")
        return io.BufferedReader(raw, buffer_size=min(self.chunk_size, MiB))

    def read_bytes(self, uri: str) -> bytes:
        """One verified download (GCS checks the CRC32C/MD5 of whole-object reads)."""
        try:
            return bytes(self._blob(uri).download_as_bytes())
        except gexc.NotFound as exc:
            raise self._missing(uri, "read") from exc
        except Exception as exc:
            raise self._error(exc, "read", uri) from exc

    # -- writes ------------------------------------------------------------------------------------

    def _chunk_size(self, size: int) -> int:
        """The resumable upload's chunk: far below GCS's limits on chunk count, 256 KiB-aligned."""
        chunks_needed = math.ceil(size / 10_000)
        return max(self.multipart_chunk_size, math.ceil(chunks_needed / GCS_CHUNK_ALIGNMENT) * GCS_CHUNK_ALIGNMENT)

    def write_buffer_size(self, size: int) -> int:
        return size + 1 if size < self.multipart_threshold else self._chunk_size(size)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        self._split(uri)
        data, whole = whole_or_head(uri, stream, size, self.multipart_threshold)
        if whole:
            return self._put(uri, bytes(data))  # the SDK takes bytes, not a bytearray
        return self._resumable(uri, _UploadSource(uri, bytes(data), stream, size), size)

    def _put(self, uri: str, data: bytes) -> ObjectStat:
        blob = self._blob(uri)
        blob.chunk_size = None  # one multipart request: atomic and checksummed
        try:
            blob.upload_from_string(data, content_type="application/octet-stream", checksum="crc32c")
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=len(data), etag=blob.etag)

    def _resumable(self, uri: str, source: _UploadSource, size: int | None) -> ObjectStat:
        blob = self._blob(uri)
        if size is not None:
            blob.chunk_size = self._chunk_size(size)
        try:
            # size=None: the SDK would otherwise send objects up to 8 MiB in one request, read in one piece;
            # the source enforces the announced size itself, before the upload is finalised
            blob.upload_from_file(source, size=None, content_type="application/octet-stream", checksum="crc32c")
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=int(blob.size if blob.size is not None else source.tell()), etag=blob.etag)

    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        if len(data) < self.multipart_threshold:
            return self._put(uri, bytes(data))  # (``_blob`` checks the URI before anything is sent)
        return self.write_stream(uri, io.BytesIO(data), len(data))

    def delete(self, uri: str) -> None:
        blob = self._blob(uri)
        try:
            blob.delete()
        except gexc.NotFound:
            return
        except Exception as exc:
            raise self._error(exc, "delete", uri) from exc

    # -- listing -----------------------------------------------------------------------------------

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        bucket, prefix = self._split(uri_prefix, object_key=False)
        base = f"gs://{bucket}/"
        # GCS's startOffset includes the key itself; the comparison below leaves it out (and anything before)
        offset = start_after.removeprefix(base) if start_after is not None and start_after.startswith(base) else None
        try:
            for blob in self.client.list_blobs(bucket, prefix=prefix or None, start_offset=offset):
                uri = f"{base}{blob.name}"
                if start_after is None or uri > start_after:
                    yield ObjectInfo(uri=uri, size=int(blob.size or 0), etag=blob.etag)
        except gexc.NotFound as exc:
            raise BucketNotFound(
                f"list {uri_prefix}: bucket '{bucket}' does not exist at {self._where()}", uri=uri_prefix
            ) from exc
        except Exception as exc:
            raise self._error(exc, "list", uri_prefix) from exc

    # -- server-side copies ------------------------------------------------------------------------

    def same_endpoint_as(self, other: Blockstore) -> bool:
        return isinstance(other, GCSBlockstore) and other.endpoint == self.endpoint

    def server_side_copy(self, src_uri: str, dst_uri: str) -> ObjectStat:
        """GCS rewrite, repeated until done (large or cross-location copies take several calls)."""
        source = self._blob(src_uri)
        target = self._blob(dst_uri)
        try:
            token, _, _ = target.rewrite(source)
            for _ in range(100_000):
                if token is None:
                    break
                token, _, _ = target.rewrite(source, token=token)
        except gexc.NotFound as exc:
            raise self._missing(src_uri, "copy") from exc
        except Exception as exc:
            raise self._error(exc, f"copy {src_uri} ->", dst_uri) from exc
        return ObjectStat(size=int(target.size or 0), etag=target.etag)
