"""A blockstore on S3 or any S3-compatible endpoint (MinIO, Ceph, ...): object bytes through obstore, the rest
through boto3.

``S3Blockstore`` is put together from one part per concern, each in its own module: construction,
credentials and the client (``s3_client``), reads and listing (``s3_reads``), writes and multipart
uploads (``s3_writes``), server-side copies (``s3_copy``) and error mapping (``s3_errors``).
"""

from __future__ import annotations

from typing import ClassVar

from .s3_client import DEFAULT_MULTIPART_CHUNK_SIZE, DEFAULT_MULTIPART_THRESHOLD, MIN_PART_SIZE
from .s3_copy import S3Copies
from .s3_errors import map_s3_error
from .s3_reads import S3Reads
from .s3_writes import S3Writes

__all__ = [
    "DEFAULT_MULTIPART_CHUNK_SIZE",
    "DEFAULT_MULTIPART_THRESHOLD",
    "MIN_PART_SIZE",
    "S3Blockstore",
    "map_s3_error",
]


class S3Blockstore(S3Copies, S3Writes, S3Reads):
    """S3 or S3-compatible storage; one thread-safe boto3 client per store."""

    schemes: ClassVar[frozenset[str]] = frozenset({"s3"})
