"""A blockstore on S3 or any S3-compatible endpoint (MinIO, Ceph, ...): object bytes through obstore, the rest
through boto3.

Object GET, PUT (single and multipart), HEAD and directory listings go through obstore (``s3_native``) unless a
proxy is configured; then boto3 takes them, with explicit multipart calls rather than boto3's transfer manager
(which buffers up to ten parts per upload). Either way this package picks the part size, the byte budget reserves
every part an upload may hold (``write_buffer_size``), and a failed multipart upload is aborted, so S3 never
exposes a partial object. Listings of other prefixes, server-side copies, deletes and bucket calls stay on boto3.
The connection is built by ``s3_client``; errors of both paths map once, in ``s3_errors``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar, TypeVar, cast

from .base import Blockstore, ObjectInfo, ObjectStat, ReadableStream
from .concurrency import AUTO_CAP
from .errors import (
    BucketNotFound,
    ChecksumMismatchError,
    InvalidStorageURI,
    ObjectNotFound,
    StorageAccessError,
    StorageError,
)
from .native import UPLOAD_PARTS_HELD
from .s3_client import (
    DEFAULT_MULTIPART_CHUNK_SIZE,
    DEFAULT_MULTIPART_THRESHOLD,
    MAX_PARTS,
    MIN_PART_SIZE,
    MiB,
    check_settings,
    connect,
    endpoint_identity,
)
from .s3_errors import ACCESS_CODES, map_s3_error, s3_answer
from .s3_native import STREAMED_MIN_BYTES, UnlistableKeyError
from .streams import READ_PIECE, BodyReader, CheckedParts, exact_pieces, strip_etag, whole_or_head
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

_Piece = TypeVar("_Piece")


class S3Blockstore(Blockstore):
    """S3 or S3-compatible storage; one thread-safe boto3 client per store, and its obstore requests (``_direct``,
    None through a proxy)."""

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
        max_pool_connections: int = AUTO_CAP,  # boto3's, per host: one for each copy in flight
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        profile: str | None = None,
        credentials_file: str | None = None,
        verify_tls: bool = True,
        server_side_encryption: str | None = None,
        sse_kms_key_id: str | None = None,
    ) -> None:
        check_settings(
            endpoint=endpoint,
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            session_token=session_token,
            multipart_threshold=multipart_threshold,
            multipart_chunk_size=multipart_chunk_size,
            max_attempts=max_attempts,
            server_side_encryption=server_side_encryption,
            sse_kms_key_id=sse_kms_key_id,
        )
        self.endpoint = endpoint or None
        # Custom endpoints still need a region to sign requests; MinIO and most others accept us-east-1.
        self.region = region or ("us-east-1" if endpoint else None)
        self.force_path_style = force_path_style
        self.multipart_threshold = multipart_threshold
        self.multipart_chunk_size = multipart_chunk_size
        self.chunk_size = multipart_chunk_size
        self.uses_static_credentials = bool(access_key_id)
        self._endpoint_identity = endpoint_identity(self.endpoint, self.region)
        self._known_buckets: set[str] = set()
        self._lock = threading.Lock()
        self._sse: dict[str, str] = {}
        if server_side_encryption:
            self._sse["ServerSideEncryption"] = server_side_encryption
        if sse_kms_key_id:
            self._sse["SSEKMSKeyId"] = sse_kms_key_id
        self._client, self._direct = connect(
            endpoint=self.endpoint,
            region=self.region,
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            session_token=session_token,
            profile=profile,
            credentials_file=credentials_file,
            force_path_style=force_path_style,
            max_attempts=max_attempts,
            max_pool_connections=max_pool_connections,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            verify_tls=verify_tls,
            server_side_encryption=server_side_encryption,
            sse_kms_key_id=sse_kms_key_id,
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

    # -- reads -------------------------------------------------------------------------------------

    def _check_bucket(self, bucket: str, uri: str) -> None:
        """Raise BucketNotFound if the bucket is missing, so a 404 HEAD is not mistaken for "absent"."""
        if bucket in self._known_buckets:
            return
        try:
            self._client.head_bucket(Bucket=bucket)
        except Exception as exc:
            answer = s3_answer(exc)
            if answer is None:
                raise self._error(exc, "stat", uri) from exc
            if answer.status == 404 or answer.code in ("NoSuchBucket", "404", "NotFound"):
                raise BucketNotFound(
                    f"stat {uri}: bucket '{bucket}' does not exist at {self._where()}", uri=uri
                ) from exc
            if not (answer.status == 403 or answer.code in ACCESS_CODES):
                raise self._error(exc, "stat", uri) from exc
            # 403: we may read objects without s3:ListBucket; assume the bucket exists.
        with self._lock:
            self._known_buckets.add(bucket)

    def stat(self, uri: str) -> ObjectStat | None:
        bucket, key = self._split(uri)
        try:
            found = self._head(bucket, key)
        except Exception as exc:
            answer = s3_answer(exc)
            if answer is None or answer.status != 404:
                error = self._error(exc, "stat", uri)
                if answer is not None and isinstance(error, StorageAccessError):
                    error = StorageAccessError(
                        f"{error} (S3 also answers 403 for a missing object when s3:ListBucket is not granted)",
                        uri=uri,
                    )
                raise error from exc
            found = None  # a 404 HEAD: no such object, or no such bucket (its answer has no body to tell)
        if found is None:
            self._check_bucket(bucket, uri)
        return found

    def _head(self, bucket: str, key: str) -> ObjectStat | None:
        """Size and ETag, or None for a 404 through obstore (boto3 raises it)."""
        if self._direct is not None:
            return self._direct.head(bucket, key)
        head = self._client.head_object(Bucket=bucket, Key=key)
        return ObjectStat(size=int(head["ContentLength"]), etag=strip_etag(head.get("ETag")))

    def part_size(self, uri: str) -> int | None:
        bucket, key = self._split(uri)
        try:
            head = self._client.head_object(Bucket=bucket, Key=key, PartNumber=1)
        except Exception as exc:  # a hint only: the caller falls back to the common part sizes
            log.debug("HEAD of part 1 of %s failed: %s", uri, exc)
            return None
        return int(head["ContentLength"]) if int(head.get("PartsCount") or 1) > 1 else None

    def _body_reader(self, uri: str, *, streamed: bool = False) -> BodyReader:
        bucket, key = self._split(uri)
        body: Any
        try:
            if self._direct is None:
                body = self._client.get_object(Bucket=bucket, Key=key)["Body"]
            else:
                body = self._direct.get_stream(bucket, key) if streamed else self._direct.get(bucket, key)
        except Exception as exc:
            raise self._error(exc, "read", uri) from exc
        return BodyReader(body, lambda exc: self._error(exc, "read", uri))

    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        if size is not None and size >= STREAMED_MIN_BYTES and self._direct is not None:
            return cast(BinaryIO, self._body_reader(uri, streamed=True))  # the copy reads a piece at a time
        return io.BufferedReader(self._body_reader(uri), buffer_size=min(self.chunk_size, MiB))

    def read_bytes(self, uri: str) -> bytes:
        with self._body_reader(uri) as raw:
            return raw.readall()

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        bucket, prefix = self._split(uri_prefix, object_key=False)
        base = f"s3://{bucket}/"
        after = start_after.removeprefix(base) if start_after is not None and start_after.startswith(base) else None
        if start_after is not None and start_after >= base and after is None:
            return  # a URI of another bucket that sorts after every key of this one
        if self._direct is not None and self._direct.lists_exactly(prefix, after=after):
            try:
                for key, size, etag in self._direct.list(bucket, prefix, after=after):
                    yield ObjectInfo(uri=f"{base}{key}", size=size, etag=strip_etag(etag))
                    after = key
                return
            except UnlistableKeyError as exc:  # boto3 lists on from the last key obstore gave
                log.debug("listing %s through obstore stopped after %s (%s); boto3 goes on", uri_prefix, after, exc)
            except Exception as exc:
                raise self._error(exc, "list", uri_prefix) from exc
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=bucket, Prefix=prefix, StartAfter=after or ""):
                for item in page.get("Contents", []):
                    yield ObjectInfo(
                        uri=f"{base}{item['Key']}",
                        size=int(item["Size"]),
                        etag=strip_etag(item.get("ETag")),
                    )
        except Exception as exc:
            raise self._error(exc, "list", uri_prefix) from exc

    # -- writes ------------------------------------------------------------------------------------

    def _part_size(self, size: int | None) -> int:
        if size is None:
            return self.multipart_chunk_size
        needed = math.ceil(size / MAX_PARTS)
        return max(self.multipart_chunk_size, math.ceil(needed / MiB) * MiB)

    def _streams(self, size: int | None) -> bool:
        """Whether an object of ``size`` bytes goes in one streamed PUT (``s3_native.STREAMED_MIN_BYTES``)."""
        return (
            size is not None
            and STREAMED_MIN_BYTES <= size < self.multipart_threshold
            and self._direct is not None
            and self._direct.unsigned_puts
        )

    def write_buffer_size(self, size: int) -> int:
        if self._streams(size):
            return READ_PIECE
        if size < self.multipart_threshold:
            return size + 1
        return self._part_size(size) * (UPLOAD_PARTS_HELD if self._direct is not None else 1)

    def answers_md5(self, size: int) -> bool:
        # a single PUT's ETag is the MD5 of what S3 (or MinIO) stored, unless server-side encryption is asked for
        return size < self.multipart_threshold and not self._sse

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        bucket, key = self._split(uri)
        if self._streams(size):
            assert size is not None and self._direct is not None
            try:
                etag = self._direct.put_stream(bucket, key, exact_pieces(uri, stream, size), size)
            except Exception as exc:
                raise self._error(exc, "write", uri) from exc  # the source's own storage errors pass as they are
            return ObjectStat(size=size, etag=strip_etag(etag))
        data, whole = whole_or_head(uri, stream, size, self.multipart_threshold)
        if whole:
            return self._put(bucket, key, uri, data)
        parts = CheckedParts(uri, data, stream, self._part_size(size), size, max_parts=MAX_PARTS)
        if self._direct is None:  # part after part, one part in memory
            etag = self._boto3_multipart(bucket, key, "write", uri, parts, self._upload_part)
        else:
            try:
                etag = self._direct.upload(bucket, key, parts, parts.part_size)
            except Exception as exc:
                raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=parts.written, etag=strip_etag(etag))

    def _put(self, bucket: str, key: str, uri: str, data: bytes | bytearray) -> ObjectStat:
        etag: str | None
        try:
            if self._direct is None:
                response = self._client.put_object(Bucket=bucket, Key=key, Body=data, **self._sse)  # type: ignore[arg-type]
                etag = response.get("ETag")
            else:
                etag = self._direct.put(bucket, key, data)
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=len(data), etag=strip_etag(etag))

    def _upload_part(self, part: dict[str, Any], body: bytearray) -> str:
        # botocore takes a bytearray as is (validate.py)
        return self._client.upload_part(**part, Body=body)["ETag"]  # type: ignore[arg-type]

    def _boto3_multipart(
        self,
        bucket: str,
        key: str,
        operation: str,
        uri: str,
        pieces: Iterable[_Piece],
        send: Callable[[dict[str, Any], _Piece], str],
    ) -> str | None:
        """A multipart upload through boto3 (writes through a proxy, server-side copies): ``send`` sends each of
        ``pieces`` as the part its first argument names (bucket, key, upload and part number) and returns the part's
        ETag. Any failure aborts the upload, so no partial object stays. Returns the object's ETag."""
        try:
            upload_id = self._client.create_multipart_upload(Bucket=bucket, Key=key, **self._sse)["UploadId"]  # type: ignore[arg-type]
        except Exception as exc:
            raise self._error(exc, operation, uri) from exc
        completed = False
        try:
            uploaded: list[dict[str, Any]] = []
            for number, piece in enumerate(pieces, start=1):
                part = {"Bucket": bucket, "Key": key, "UploadId": upload_id, "PartNumber": number}
                uploaded.append({"ETag": send(part, piece), "PartNumber": number})
                del piece  # one part in memory: this one goes before the next is read
            result = self._client.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": uploaded},  # type: ignore[typeddict-item]
            )
            completed = True
            return result.get("ETag")
        except Exception as exc:
            raise self._error(exc, operation, uri) from exc
        finally:
            if not completed:  # best effort: if aborting fails too, bucket lifecycle rules clean up
                with contextlib.suppress(Exception):
                    self._client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)

    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        if len(data) < self.multipart_threshold:
            bucket, key = self._split(uri)
            stat = self._put(bucket, key, uri, bytes(data))
            if md5 is None and self._direct is not None and self._direct.unsigned_puts:
                md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()  # an unsigned PUT: the MD5 checks it
            if md5 is not None and self.answers_md5(len(data)) and stat.etag is not None and stat.etag.lower() != md5:
                self.delete(uri)
                raise ChecksumMismatchError(
                    f"write {uri}: the store stored bytes with MD5 {stat.etag}, the bytes given have MD5 {md5}; "
                    "deleted",
                    uri=uri,
                )
            return stat
        return self.write_stream(uri, io.BytesIO(data), len(data))

    def delete(self, uri: str) -> None:
        bucket, key = self._split(uri)
        try:
            self._client.delete_object(Bucket=bucket, Key=key)
        except Exception as exc:
            raise self._error(exc, "delete", uri) from exc

    # -- server-side copies ------------------------------------------------------------------------

    def same_endpoint_as(self, other: Blockstore) -> bool:
        return isinstance(other, S3Blockstore) and other._endpoint_identity == self._endpoint_identity

    def server_side_copy(self, src_uri: str, dst_uri: str) -> ObjectStat:
        """CopyObject (UploadPartCopy above 5 GiB, ``copy_part_size`` parts) using this store's credentials to read
        the source: no bytes pass through this process."""
        src_bucket, src_key = self._split(src_uri)
        dst_bucket, dst_key = self._split(dst_uri)
        src = self.stat(src_uri)
        if src is None:
            raise ObjectNotFound(f"copy {src_uri}: no such object at {self._where()}", uri=src_uri)
        source: Any = {"Bucket": src_bucket, "Key": src_key}
        operation = f"copy {src_uri} ->"
        if src.size <= self.max_single_copy_size:
            try:
                response = self._client.copy_object(Bucket=dst_bucket, Key=dst_key, CopySource=source, **self._sse)  # type: ignore[arg-type]
            except Exception as exc:
                raise self._error(exc, operation, dst_uri) from exc
            return ObjectStat(size=src.size, etag=strip_etag(response.get("CopyObjectResult", {}).get("ETag")))
        part_size = max(self.copy_part_size, MIN_PART_SIZE, math.ceil(src.size / MAX_PARTS))

        def copy_part(part: dict[str, Any], start: int) -> str:
            end = min(start + part_size, src.size) - 1
            answer = self._client.upload_part_copy(**part, CopySource=source, CopySourceRange=f"bytes={start}-{end}")
            return answer["CopyPartResult"]["ETag"]

        ranges = range(0, src.size, part_size)
        etag = self._boto3_multipart(dst_bucket, dst_key, operation, dst_uri, ranges, copy_part)
        return ObjectStat(size=src.size, etag=strip_etag(etag))
