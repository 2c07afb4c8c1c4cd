"""A blockstore on S3 or any S3-compatible endpoint (MinIO, Ceph, ...), through boto3.

Uploads use explicit multipart calls rather than boto3's transfer manager so that memory stays bounded
by one part per transfer (the transfer manager buffers up to ten parts per upload); a failed multipart
upload is aborted, so S3 never exposes a partial object.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions
import botocore.session
import urllib3.exceptions

from .base import Blockstore, ObjectInfo, ObjectStat, ReadableStream
from .checksums import S3_MIN_PART_SIZE
from .errors import (
    BucketNotFound,
    InvalidStorageURI,
    ObjectNotFound,
    SizeMismatchError,
    StorageAccessError,
    StorageConfigError,
    StorageError,
    TransientStorageError,
)
from .s3_direct import DirectS3Requests, S3ErrorResponse, as_client_error, is_transient, uses_proxy
from .streams import read_exact, strip_etag
from .uri import parse_uri

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MULTIPART_CHUNK_SIZE",
    "DEFAULT_MULTIPART_THRESHOLD",
    "MIN_PART_SIZE",
    "S3Blockstore",
    "map_s3_error",
]

MiB = 1024 * 1024
#: S3's smallest allowed part (all parts but the last).
MIN_PART_SIZE = S3_MIN_PART_SIZE
#: S3's largest number of parts in one multipart upload.
MAX_PARTS = 10_000
DEFAULT_MULTIPART_THRESHOLD = 16 * MiB
DEFAULT_MULTIPART_CHUNK_SIZE = 8 * MiB

_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NotFound", "404", "NoSuchVersion"})
_ACCESS_CODES = frozenset(
    {
        "AccessDenied",
        "403",
        "Forbidden",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AllAccessDisabled",
        "AccountProblem",
    }
)
_TRANSIENT_ERRORS = (
    urllib3.exceptions.HTTPError,
    ConnectionError,
    TimeoutError,
    botocore.exceptions.EndpointConnectionError,
    botocore.exceptions.ConnectionClosedError,
    botocore.exceptions.ConnectTimeoutError,
    botocore.exceptions.ReadTimeoutError,
    botocore.exceptions.ResponseStreamingError,
    botocore.exceptions.IncompleteReadError,
)


def map_s3_error(exc: BaseException, operation: str, uri: str, where: str = "") -> StorageError:
    """Map a boto3/botocore/urllib3 error to the storage hierarchy.

    Only the S3 error code and message are used: they never contain credentials (the full response can
    carry a string-to-sign, which is not copied).
    """
    at = f" at {where}" if where else ""
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        message = str(error.get("Message", "") or "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        bucket = parse_uri(uri).bucket if "://" in uri else ""
        detail = f"{code}: {message}" if message else code or f"HTTP {status}"
        if code == "NoSuchBucket":
            return BucketNotFound(f"{operation} {uri}: bucket '{bucket}' does not exist{at}", uri=uri)
        if code in _NOT_FOUND_CODES or status == 404:
            return ObjectNotFound(f"{operation} {uri}: no such object{at}", uri=uri)
        if code in _ACCESS_CODES or status == 403:
            return StorageAccessError(f"{operation} {uri}: access denied{at} ({detail})", uri=uri)
        if is_transient(status, code):
            return TransientStorageError(f"{operation} {uri}: temporary failure{at} ({detail})", uri=uri)
        return StorageError(f"{operation} {uri}: {detail}{at} (HTTP {status})", uri=uri)
    if isinstance(exc, botocore.exceptions.NoCredentialsError | botocore.exceptions.PartialCredentialsError):
        return StorageAccessError(
            f"{operation} {uri}: no usable S3 credentials: set access_key_id/secret_access_key for the store "
            "or configure the default AWS credential chain",
            uri=uri,
        )
    if isinstance(exc, _TRANSIENT_ERRORS):
        return TransientStorageError(f"{operation} {uri}: connection problem{at} ({exc})", uri=uri)
    if isinstance(exc, botocore.exceptions.ParamValidationError):
        return InvalidStorageURI(f"{operation} {uri}: invalid request ({exc})", uri=uri)
    return StorageError(f"{operation} {uri}: {type(exc).__name__}: {exc}", uri=uri)


def _normalise_endpoint(endpoint: str | None, region: str | None) -> str:
    """A comparable identity of the S3 service: same value means objects can be copied server-side."""
    if not endpoint:
        region = region or ""
        partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if "gov" in region else "aws"
        return f"aws:{partition}"
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}{parts.path.rstrip('/')}"


def _iter_parts(head: bytes, stream: ReadableStream, part_size: int) -> Iterator[bytes]:
    """Parts of exactly ``part_size`` bytes (the last may be shorter), read on demand.

    ``head`` is what was already read to decide on multipart. Each part is read in one piece so that
    at most about one part is held in memory (no growing buffer, no extra copies).
    """
    pending = head
    while len(pending) >= part_size:
        yield pending[:part_size]
        pending = pending[part_size:]
    while True:
        part = pending + read_exact(stream, part_size - len(pending)) if pending else read_exact(stream, part_size)
        pending = b""
        if not part:
            return
        yield part
        if len(part) < part_size:
            return


class _BodyReader(io.RawIOBase):
    """Raw stream over a botocore StreamingBody that maps mid-stream network errors."""

    def __init__(self, body: Any, uri: str, where: str) -> None:
        super().__init__()
        self._body = body
        self._uri = uri
        self._where = where

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._body.read(len(buffer))
        except Exception as exc:
            raise map_s3_error(exc, "read", self._uri, self._where) from exc
        n = len(data)
        buffer[:n] = data
        return n

    def readall(self) -> bytes:
        try:
            return bytes(self._body.read())
        except Exception as exc:
            raise map_s3_error(exc, "read", self._uri, self._where) from exc

    def close(self) -> None:
        if not self.closed:
            try:
                self._body.close()
            finally:
                super().close()


class S3Blockstore(Blockstore):
    """S3 or S3-compatible storage; one thread-safe boto3 client per store."""

    schemes: ClassVar[frozenset[str]] = frozenset({"s3"})
    #: Above this size a server-side copy must use UploadPartCopy (S3's CopyObject limit is 5 GiB).
    max_single_copy_size: int = 5 * 1024 * MiB
    #: Part size of server-side multipart copies (no bytes pass through us, so parts can be large).
    copy_part_size: int = 512 * MiB

    def __init__(
        self,
        *,
        endpoint: str | None,
        region: str | None,
        access_key_id: str | None,
        secret_access_key: str | None,
        session_token: str | None = None,
        force_path_style: bool = True,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunk_size: int = DEFAULT_MULTIPART_CHUNK_SIZE,
        max_attempts: int = 5,
        max_pool_connections: int = 32,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        profile: str | None = None,
        credentials_file: str | None = None,
        verify_tls: bool = True,
        server_side_encryption: str | None = None,
        sse_kms_key_id: str | None = None,
    ) -> None:
        if endpoint:
            scheme = urlsplit(endpoint).scheme
            if scheme not in ("http", "https") or not urlsplit(endpoint).hostname:
                raise StorageConfigError(
                    f"s3 blockstore: endpoint {endpoint!r} must be an http:// or https:// URL with a host"
                )
        if bool(access_key_id) != bool(secret_access_key):
            raise StorageConfigError(
                "s3 blockstore: give both access_key_id and secret_access_key, or neither "
                "(to use the default AWS credential chain)"
            )
        if session_token and not access_key_id:
            raise StorageConfigError("s3 blockstore: session_token needs access_key_id and secret_access_key")
        if multipart_chunk_size < MIN_PART_SIZE:
            raise StorageConfigError(
                f"s3 blockstore: multipart_chunk_size {multipart_chunk_size} is below S3's minimum part size "
                f"{MIN_PART_SIZE} (5 MiB)"
            )
        if multipart_threshold < 1:
            raise StorageConfigError(f"s3 blockstore: multipart_threshold must be positive, got {multipart_threshold}")
        if server_side_encryption not in (None, "", "AES256", "aws:kms"):
            raise StorageConfigError(
                f"s3 blockstore: server_side_encryption {server_side_encryption!r} must be AES256 or aws:kms"
            )
        if sse_kms_key_id and server_side_encryption != "aws:kms":
            raise StorageConfigError("s3 blockstore: sse_kms_key_id needs server_side_encryption 'aws:kms'")
        if max_attempts < 1:
            raise StorageConfigError(f"s3 blockstore: max_attempts must be at least 1, got {max_attempts}")
        self.endpoint = endpoint or None
        # Custom endpoints still need a region to sign requests; MinIO and most others accept us-east-1.
        self.region = region or ("us-east-1" if endpoint else None)
        self.force_path_style = force_path_style
        self.multipart_threshold = multipart_threshold
        self.multipart_chunk_size = multipart_chunk_size
        self.chunk_size = multipart_chunk_size
        self.uses_static_credentials = bool(access_key_id)
        self._endpoint_identity = _normalise_endpoint(self.endpoint, self.region)
        self._known_buckets: set[str] = set()
        self._lock = threading.Lock()
        config = botocore.config.Config(
            region_name=self.region,
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            s3={"addressing_style": "path" if force_path_style else "auto"},
            max_pool_connections=max_pool_connections,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            # Many S3-compatible stores reject the CRC trailers boto3 sends by default since 1.36.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        self._sse: dict[str, str] = {}
        if server_side_encryption:
            self._sse["ServerSideEncryption"] = server_side_encryption
        if sse_kms_key_id:
            self._sse["SSEKMSKeyId"] = sse_kms_key_id
        core = botocore.session.Session(profile=profile or None)
        if credentials_file:
            core.set_config_variable("credentials_file", os.path.expanduser(credentials_file))
        session = boto3.session.Session(
            aws_access_key_id=access_key_id or None,
            aws_secret_access_key=secret_access_key or None,
            aws_session_token=session_token or None,
            region_name=self.region,
            botocore_session=core,
        )
        self._client: S3Client = session.client(
            "s3", endpoint_url=self.endpoint, config=config, verify=None if verify_tls else False
        )
        put_headers = {"x-amz-server-side-encryption": server_side_encryption} if server_side_encryption else {}
        if sse_kms_key_id:
            put_headers["x-amz-server-side-encryption-aws-kms-key-id"] = sse_kms_key_id
        #: Object GET, single-part PUT and HEAD without boto3's per-request overhead (see s3_direct); requests
        #: that must go through a proxy stay on boto3, which honours the proxy settings.
        self._direct: DirectS3Requests | None = None
        if not uses_proxy(self._client.meta.endpoint_url):
            self._direct = DirectS3Requests(
                self._client,
                session.get_credentials(),
                max_pool_connections=max_pool_connections,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                verify_tls=verify_tls,
                max_attempts=max_attempts,
                put_headers=put_headers,
            )

    @property
    def client(self) -> S3Client:
        """The underlying boto3 client, for operations outside the blockstore interface."""
        return self._client

    def describe(self) -> str:
        return f"S3 endpoint {self.endpoint or 'AWS default'} (region {self.region or 'from environment'})"

    def _where(self) -> str:
        return self.endpoint or "AWS S3"

    def _split(self, uri: str, *, object_key: bool = True) -> tuple[str, str]:
        parsed = parse_uri(uri)
        if parsed.scheme != "s3":
            raise InvalidStorageURI(f"{uri}: S3 blockstore only serves s3:// URIs", uri=uri)
        if object_key and (not parsed.key or parsed.key.endswith("/")):
            raise InvalidStorageURI(f"{uri}: names no object key (expected s3://bucket/key)", uri=uri)
        return parsed.bucket, parsed.key

    def _error(self, exc: BaseException, operation: str, uri: str) -> StorageError:
        return map_s3_error(exc, operation, uri, self._where())

    def _check_bucket(self, bucket: str, uri: str) -> None:
        """Raise BucketNotFound if the bucket is missing, so a 404 HEAD is not mistaken for "absent"."""
        if bucket in self._known_buckets:
            return
        try:
            self._client.head_bucket(Bucket=bucket)
        except botocore.exceptions.ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if status == 404 or code in ("NoSuchBucket", "404", "NotFound"):
                raise BucketNotFound(
                    f"stat {uri}: bucket '{bucket}' does not exist at {self._where()}", uri=uri
                ) from exc
            if not (status == 403 or code in _ACCESS_CODES):
                raise self._error(exc, "stat", uri) from exc
            # 403: we may read objects without s3:ListBucket; assume the bucket exists.
        except Exception as exc:
            raise self._error(exc, "stat", uri) from exc
        with self._lock:
            self._known_buckets.add(bucket)

    # -- reads -------------------------------------------------------------------------------------

    def stat(self, uri: str) -> ObjectStat | None:
        bucket, key = self._split(uri)
        try:
            head = self._head_object(bucket, key)
        except botocore.exceptions.ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                self._check_bucket(bucket, uri)
                return None
            error = self._error(exc, "stat", uri)
            if isinstance(error, StorageAccessError):
                error = StorageAccessError(
                    f"{error} (S3 also answers 403 for a missing object when s3:ListBucket is not granted)",
                    uri=uri,
                )
            raise error from exc
        except Exception as exc:
            raise self._error(exc, "stat", uri) from exc
        return ObjectStat(size=int(head["ContentLength"]), etag=strip_etag(head.get("ETag")))

    def part_size(self, uri: str) -> int | None:
        bucket, key = self._split(uri)
        try:
            head = self._client.head_object(Bucket=bucket, Key=key, PartNumber=1)
        except Exception as exc:  # a hint only: the caller falls back to the common part sizes
            log.debug("HEAD of part 1 of %s failed: %s", uri, exc)
            return None
        return int(head["ContentLength"]) if int(head.get("PartsCount") or 1) > 1 else None

    def _head_object(self, bucket: str, key: str) -> Any:
        if self._direct is None:
            return self._client.head_object(Bucket=bucket, Key=key)
        try:
            response = self._direct.head(bucket, key)
        except S3ErrorResponse as exc:
            raise as_client_error(exc, "HeadObject") from exc
        if response is None:
            raise as_client_error(S3ErrorResponse(404, "404", "Not Found"), "HeadObject")
        return {"ContentLength": response.headers["Content-Length"], "ETag": response.headers.get("ETag")}

    def _get_body(self, uri: str) -> Any:
        bucket, key = self._split(uri)
        try:
            if self._direct is None:
                return self._client.get_object(Bucket=bucket, Key=key)["Body"]
            try:
                return self._direct.get(bucket, key)
            except S3ErrorResponse as exc:
                raise as_client_error(exc, "GetObject") from exc
        except Exception as exc:
            raise self._error(exc, "read", uri) from exc

    def open_read(self, uri: str) -> io.BufferedReader:
        raw = _BodyReader(self._get_body(uri), uri, self._where())
        return io.BufferedReader(raw, buffer_size=min(self.chunk_size, MiB))

    def read_bytes(self, uri: str) -> bytes:
        with _BodyReader(self._get_body(uri), uri, self._where()) as raw:
            return raw.readall()

    # -- writes ------------------------------------------------------------------------------------

    def _part_size(self, size: int | None) -> int:
        if size is None:
            return self.multipart_chunk_size
        needed = math.ceil(size / MAX_PARTS)
        return max(self.multipart_chunk_size, math.ceil(needed / MiB) * MiB)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        bucket, key = self._split(uri)
        if size is not None and size < 0:
            raise ValueError(f"write {uri}: size must not be negative, got {size}")
        if size is not None and size < self.multipart_threshold:
            data = read_exact(stream, size + 1)
            self._check_size(uri, size, len(data))
            return self._put(bucket, key, uri, data)
        head = b""
        if size is None:
            head = read_exact(stream, self.multipart_threshold)
            if len(head) < self.multipart_threshold:
                return self._put(bucket, key, uri, head)
        return self._multipart_upload(bucket, key, uri, head, stream, size)

    @staticmethod
    def _check_size(uri: str, expected: int | None, got: int) -> None:
        if expected is not None and got != expected:
            got_text = f"more than {expected}" if got > expected else str(got)
            raise SizeMismatchError(
                f"write {uri}: expected {expected} bytes but the source delivered {got_text}; nothing was stored",
                uri=uri,
            )

    def _put(self, bucket: str, key: str, uri: str, data: bytes) -> ObjectStat:
        etag: str | None
        try:
            if self._direct is None:
                response = self._client.put_object(Bucket=bucket, Key=key, Body=data, **self._sse)  # type: ignore[arg-type]
                etag = response.get("ETag")
            else:
                try:
                    etag = self._direct.put(bucket, key, data).headers.get("ETag")
                except S3ErrorResponse as exc:
                    raise as_client_error(exc, "PutObject") from exc
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=len(data), etag=strip_etag(etag))

    def _multipart_upload(
        self, bucket: str, key: str, uri: str, head: bytes, stream: ReadableStream, size: int | None
    ) -> ObjectStat:
        part_size = self._part_size(size)
        try:
            upload_id = self._client.create_multipart_upload(Bucket=bucket, Key=key, **self._sse)["UploadId"]  # type: ignore[arg-type]
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        completed = False
        try:
            parts: list[dict[str, Any]] = []
            written = 0
            for body in _iter_parts(head, stream, part_size):
                written += len(body)
                if size is not None and written > size:
                    self._check_size(uri, size, written)
                number = len(parts) + 1
                if number > MAX_PARTS:
                    raise StorageError(
                        f"write {uri}: object needs more than {MAX_PARTS} parts of {part_size} bytes; "
                        "pass its size or raise multipart_chunk_size",
                        uri=uri,
                    )
                response = self._client.upload_part(
                    Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body
                )
                parts.append({"ETag": response["ETag"], "PartNumber": number})
                del body
            self._check_size(uri, size, written)
            result = self._client.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},  # type: ignore[typeddict-item]
            )
            completed = True
            return ObjectStat(size=written, etag=strip_etag(result.get("ETag")))
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        finally:
            if not completed:
                self._abort(bucket, key, upload_id)

    def _abort(self, bucket: str, key: str, upload_id: str) -> None:
        # Best effort: if aborting fails too, bucket lifecycle rules clean up incomplete uploads.
        with contextlib.suppress(Exception):
            self._client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)

    def write_bytes(self, uri: str, data: bytes) -> ObjectStat:
        if len(data) < self.multipart_threshold:
            bucket, key = self._split(uri)
            return self._put(bucket, key, uri, bytes(data))
        return self.write_stream(uri, io.BytesIO(data), len(data))

    def delete(self, uri: str) -> None:
        bucket, key = self._split(uri)
        try:
            self._client.delete_object(Bucket=bucket, Key=key)
        except Exception as exc:
            raise self._error(exc, "delete", uri) from exc

    # -- listing -----------------------------------------------------------------------------------

    def list_prefix(self, uri_prefix: str) -> Iterator[ObjectInfo]:
        bucket, prefix = self._split(uri_prefix, object_key=False)
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
                for item in page.get("Contents", []):
                    yield ObjectInfo(
                        uri=f"s3://{bucket}/{item['Key']}",
                        size=int(item["Size"]),
                        etag=strip_etag(item.get("ETag")),
                    )
        except Exception as exc:
            raise self._error(exc, "list", uri_prefix) from exc

    # -- server-side copies ------------------------------------------------------------------------

    def same_endpoint_as(self, other: Blockstore) -> bool:
        return isinstance(other, S3Blockstore) and other._endpoint_identity == self._endpoint_identity

    def server_side_copy(self, src_uri: str, dst_uri: str) -> ObjectStat:
        """CopyObject (UploadPartCopy above 5 GiB) using this store's credentials to read the source."""
        src_bucket, src_key = self._split(src_uri)
        dst_bucket, dst_key = self._split(dst_uri)
        src = self.stat(src_uri)
        if src is None:
            raise ObjectNotFound(f"copy {src_uri}: no such object at {self._where()}", uri=src_uri)
        source = {"Bucket": src_bucket, "Key": src_key}
        if src.size <= self.max_single_copy_size:
            try:
                response = self._client.copy_object(
                    Bucket=dst_bucket,
                    Key=dst_key,
                    CopySource=source,  # type: ignore[arg-type]
                    **self._sse,  # type: ignore[arg-type]
                )
            except Exception as exc:
                raise self._error(exc, f"copy {src_uri} ->", dst_uri) from exc
            return ObjectStat(size=src.size, etag=strip_etag(response.get("CopyObjectResult", {}).get("ETag")))
        return self._multipart_copy(source, src_uri, src.size, dst_bucket, dst_key, dst_uri)

    def _multipart_copy(
        self, source: dict[str, str], src_uri: str, size: int, bucket: str, key: str, uri: str
    ) -> ObjectStat:
        part_size = max(self.copy_part_size, MIN_PART_SIZE, math.ceil(size / MAX_PARTS))
        try:
            upload_id = self._client.create_multipart_upload(Bucket=bucket, Key=key, **self._sse)["UploadId"]  # type: ignore[arg-type]
        except Exception as exc:
            raise self._error(exc, f"copy {src_uri} ->", uri) from exc
        completed = False
        try:
            parts: list[dict[str, Any]] = []
            for number, start in enumerate(range(0, size, part_size), start=1):
                end = min(start + part_size, size) - 1
                response = self._client.upload_part_copy(
                    Bucket=bucket,
                    Key=key,
                    UploadId=upload_id,
                    PartNumber=number,
                    CopySource=source,  # type: ignore[arg-type]
                    CopySourceRange=f"bytes={start}-{end}",
                )
                parts.append({"ETag": response["CopyPartResult"]["ETag"], "PartNumber": number})
            result = self._client.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},  # type: ignore[typeddict-item]
            )
            completed = True
            return ObjectStat(size=size, etag=strip_etag(result.get("ETag")))
        except Exception as exc:
            raise self._error(exc, f"copy {src_uri} ->", uri) from exc
        finally:
            if not completed:
                self._abort(bucket, key, upload_id)
