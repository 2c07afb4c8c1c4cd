"""Reads from S3: HEAD, streamed and whole-object GET, listing.

Object GET, HEAD and directory listings go through obstore when there is no proxy (see ``s3_native``), else boto3.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

import botocore.exceptions

from .base import ObjectInfo, ObjectStat
from .errors import BucketNotFound, StorageAccessError
from .native import ErrorResponse
from .s3_client import MiB, S3Connection
from .s3_direct import as_client_error
from .s3_errors import ACCESS_CODES
from .s3_native import STREAMED_MIN_BYTES, UnlistableKeyError
from .streams import BodyReader, strip_etag

log = logging.getLogger(__name__)

__all__ = ["S3Reads"]


class S3Reads(S3Connection):
    """HEAD, GET and LIST of an S3 store."""

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
            if not (status == 403 or code in ACCESS_CODES):
                raise self._error(exc, "stat", uri) from exc
            # 403: we may read objects without s3:ListBucket; assume the bucket exists.
        except Exception as exc:
            raise self._error(exc, "stat", uri) from exc
        with self._lock:
            self._known_buckets.add(bucket)

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
            stat = self._direct.head(bucket, key)
        except ErrorResponse as exc:
            raise as_client_error(exc, "HeadObject") from exc
        if stat is None:
            raise as_client_error(ErrorResponse(404, "404", "Not Found"), "HeadObject")
        return {"ContentLength": stat.size, "ETag": stat.etag}

    def _get_body(self, uri: str, *, streamed: bool = False) -> Any:
        bucket, key = self._split(uri)
        try:
            if self._direct is None:
                return self._client.get_object(Bucket=bucket, Key=key)["Body"]
            try:
                return self._direct.get_stream(bucket, key) if streamed else self._direct.get(bucket, key)
            except ErrorResponse as exc:
                raise as_client_error(exc, "GetObject") from exc
        except Exception as exc:
            raise self._error(exc, "read", uri) from exc

    def _body_reader(self, uri: str, *, streamed: bool = False) -> BodyReader:
        return BodyReader(self._get_body(uri, streamed=streamed), lambda exc: self._error(exc, "read", uri))

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
            except ErrorResponse as exc:
                raise self._error(as_client_error(exc, "ListObjectsV2"), "list", uri_prefix) from exc
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
