"""Writes to S3: single PUTs, multipart uploads, deletes.

Both go through obstore (``s3_native``, which streams large single PUTs) unless a proxy is configured; then boto3
takes them, with explicit multipart calls rather than boto3's transfer manager (which buffers up to ten parts per
upload). Either way this package picks the part size, the byte budget reserves every part an upload may hold
(``write_buffer_size``), and a failed multipart upload is aborted, so S3 never exposes a partial object.
"""

from __future__ import annotations

import hashlib
import io
import math
from typing import Any

from .base import ObjectStat, ReadableStream
from .errors import ChecksumMismatchError
from .native import UPLOAD_PARTS_HELD, ErrorResponse
from .s3_client import MAX_PARTS, MiB, S3Connection
from .s3_direct import as_client_error
from .s3_native import STREAMED_MIN_BYTES
from .streams import READ_PIECE, CheckedParts, exact_pieces, strip_etag, whole_or_head

__all__ = ["S3Writes"]


class S3Writes(S3Connection):
    """PUT, multipart upload and DELETE of an S3 store."""

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
            return self._streamed_put(bucket, key, uri, stream, size)
        data, whole = whole_or_head(uri, stream, size, self.multipart_threshold)
        if whole:
            return self._put(bucket, key, uri, data)
        return self._multipart_upload(bucket, key, uri, data, stream, size)

    def _put(self, bucket: str, key: str, uri: str, data: bytes | bytearray) -> ObjectStat:
        etag: str | None
        try:
            if self._direct is None:
                response = self._client.put_object(Bucket=bucket, Key=key, Body=data, **self._sse)  # type: ignore[arg-type]
                etag = response.get("ETag")
            else:
                try:
                    etag = self._direct.put(bucket, key, data)
                except ErrorResponse as exc:
                    raise as_client_error(exc, "PutObject") from exc
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=len(data), etag=strip_etag(etag))

    def _streamed_put(self, bucket: str, key: str, uri: str, stream: ReadableStream, size: int) -> ObjectStat:
        assert self._direct is not None
        try:
            try:
                etag = self._direct.put_stream(bucket, key, exact_pieces(uri, stream, size), size)
            except ErrorResponse as exc:
                raise as_client_error(exc, "PutObject") from exc
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc  # the source's own storage errors pass as they are
        return ObjectStat(size=size, etag=strip_etag(etag))

    def _multipart_upload(
        self, bucket: str, key: str, uri: str, head: bytearray, stream: ReadableStream, size: int | None
    ) -> ObjectStat:
        parts = CheckedParts(uri, head, stream, self._part_size(size), size, max_parts=MAX_PARTS)
        if self._direct is None:
            return self._boto3_multipart_upload(bucket, key, uri, parts)
        try:
            try:
                etag = self._direct.upload(bucket, key, parts, parts.part_size)
            except ErrorResponse as exc:
                raise as_client_error(exc, "UploadPart") from exc
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=parts.written, etag=strip_etag(etag))

    def _boto3_multipart_upload(self, bucket: str, key: str, uri: str, parts: CheckedParts) -> ObjectStat:
        """The multipart upload through a proxy: part after part, one part in memory."""
        try:
            upload_id = self._client.create_multipart_upload(Bucket=bucket, Key=key, **self._sse)["UploadId"]  # type: ignore[arg-type]
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        completed = False
        try:
            uploaded: list[dict[str, Any]] = []
            for body in parts:
                number = len(uploaded) + 1
                response = self._client.upload_part(  # botocore takes a bytearray as is (validate.py)
                    Bucket=bucket,
                    Key=key,
                    UploadId=upload_id,
                    PartNumber=number,
                    Body=body,  # type: ignore[arg-type]
                )
                uploaded.append({"ETag": response["ETag"], "PartNumber": number})
                del body
            result = self._client.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": uploaded},  # type: ignore[typeddict-item]
            )
            completed = True
            return ObjectStat(size=parts.written, etag=strip_etag(result.get("ETag")))
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        finally:
            if not completed:
                self._abort(bucket, key, upload_id)

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
