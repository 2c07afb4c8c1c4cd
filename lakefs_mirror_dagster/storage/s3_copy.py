"""Server-side copies inside one S3 service: CopyObject, or UploadPartCopy above its 5 GiB limit."""

from __future__ import annotations

import math
from typing import Any

from .base import Blockstore, ObjectStat
from .errors import ObjectNotFound
from .s3_client import MAX_PARTS, MIN_PART_SIZE, MiB, S3Connection
from .streams import strip_etag

__all__ = ["S3Copies"]


class S3Copies(S3Connection):
    """Copies between buckets of the same S3 endpoint, with no bytes passing through this process."""

    #: Above this size a server-side copy must use UploadPartCopy (S3's CopyObject limit is 5 GiB).
    max_single_copy_size: int = 5 * 1024 * MiB
    #: Part size of server-side multipart copies (no bytes pass through us, so parts can be large).
    copy_part_size: int = 512 * MiB

    def same_endpoint_as(self, other: Blockstore) -> bool:
        return isinstance(other, S3Connection) and other._endpoint_identity == self._endpoint_identity

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
