"""Writes to S3: single PUTs, multipart uploads, deletes.

Both go through obstore (``s3_native``) unless a proxy is configured; then boto3 takes them, with explicit
multipart calls rather than boto3's transfer manager (which buffers up to ten parts per upload). Either way this
package picks the part size, the byte budget reserves every part an upload may hold (``write_buffer_size``),
and a failed multipart upload is aborted, so S3 never exposes a partial object.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from typing import Any

from .base import ObjectStat, ReadableStream
from .errors import StorageError
from .s3_client import MAX_PARTS, MiB, S3Connection
from .s3_direct import S3ErrorResponse, as_client_error
from .s3_native import UPLOAD_PARTS_HELD
from .streams import fill, size_mismatch, strip_etag

__all__ = ["S3Writes"]


def _iter_parts(head: bytearray, stream: ReadableStream, part_size: int) -> Iterator[bytearray]:
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


def _check_size(uri: str, expected: int | None, got: int) -> None:
    if expected is not None and got != expected:
        raise size_mismatch(uri, expected, None if got > expected else got)


class _CheckedParts:
    """The parts of one upload (``_iter_parts``), refused as soon as the source delivers more than ``size`` bytes,
    or needs more than ``MAX_PARTS`` parts, and at the end if it delivered fewer; ``written`` counts them."""

    def __init__(self, uri: str, head: bytearray, stream: ReadableStream, part_size: int, size: int | None) -> None:
        self._uri = uri
        self._head = head
        self._stream = stream
        self.part_size = part_size
        self._size = size
        self.written = 0

    def __iter__(self) -> Iterator[bytearray]:
        for count, body in enumerate(_iter_parts(self._head, self._stream, self.part_size), start=1):
            self.written += len(body)
            if self._size is not None and self.written > self._size:
                _check_size(self._uri, self._size, self.written)
            if count > MAX_PARTS:
                raise StorageError(
                    f"write {self._uri}: object needs more than {MAX_PARTS} parts of {self.part_size} bytes; "
                    "pass its size or raise multipart_chunk_size",
                    uri=self._uri,
                )
            yield body
            del body
        _check_size(self._uri, self._size, self.written)


class S3Writes(S3Connection):
    """PUT, multipart upload and DELETE of an S3 store."""

    def _part_size(self, size: int | None) -> int:
        if size is None:
            return self.multipart_chunk_size
        needed = math.ceil(size / MAX_PARTS)
        return max(self.multipart_chunk_size, math.ceil(needed / MiB) * MiB)

    def write_buffer_size(self, size: int) -> int:
        if size < self.multipart_threshold:
            return size + 1
        return self._part_size(size) * (UPLOAD_PARTS_HELD if self._direct is not None else 1)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        bucket, key = self._split(uri)
        if size is not None and size < 0:
            raise ValueError(f"write {uri}: size must not be negative, got {size}")
        if size is not None and size < self.multipart_threshold:
            data = fill(stream, size + 1)
            _check_size(uri, size, len(data))
            return self._put(bucket, key, uri, data)
        head = bytearray()
        if size is None:
            head = fill(stream, self.multipart_threshold)
            if len(head) < self.multipart_threshold:
                return self._put(bucket, key, uri, head)
        return self._multipart_upload(bucket, key, uri, head, stream, size)

    def _put(self, bucket: str, key: str, uri: str, data: bytes | bytearray) -> ObjectStat:
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
        self, bucket: str, key: str, uri: str, head: bytearray, stream: ReadableStream, size: int | None
    ) -> ObjectStat:
        parts = _CheckedParts(uri, head, stream, self._part_size(size), size)
        if self._direct is None:
            return self._boto3_multipart_upload(bucket, key, uri, parts)
        try:
            try:
                etag = self._direct.upload(bucket, key, parts, parts.part_size).headers.get("ETag")
            except S3ErrorResponse as exc:
                raise as_client_error(exc, "UploadPart") from exc
        except Exception as exc:
            raise self._error(exc, "write", uri) from exc
        return ObjectStat(size=parts.written, etag=strip_etag(etag))

    def _boto3_multipart_upload(self, bucket: str, key: str, uri: str, parts: _CheckedParts) -> ObjectStat:
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
