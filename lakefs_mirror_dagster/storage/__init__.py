"""Blockstores: one interface over S3 (and S3-compatible endpoints), local directories, GCS and Azure Blob.

The replication engine reads and writes objects by full storage URIs through ``Blockstore``; the
``StoreRegistry`` picks the store for a URI, and ``TransferPool`` copies many objects concurrently.
"""

from typing import TYPE_CHECKING, Any

from .bandwidth import ThrottledReader, TokenBucket, process_limiter, throttled
from .base import Blockstore, ObjectInfo, ObjectStat, ReadableStream
from .budget import DEFAULT_MAX_BYTES_IN_FLIGHT, ByteBudget
from .checksums import Check, at_rest_check
from .concurrency import AUTO_CAP, AUTO_START, CopiesInFlight, InFlightFigures, fixed_workers
from .errors import (
    BucketNotFound,
    ChecksumMismatchError,
    InvalidStorageURI,
    ObjectNotFound,
    PathEscapeError,
    SizeMismatchError,
    StorageAccessError,
    StorageConfigError,
    StorageError,
    TransientStorageError,
    UnsupportedStorageError,
)
from .local import LocalBlockstore
from .presence import listed_stats
from .registry import StoreRegistry, StoreSpec, build_blockstore
from .s3 import S3Blockstore
from .transfer import CopyResult, CopyTask, TransferFailure, TransferPool, TransferSummary, copy_object
from .uri import StorageURI, join_namespace, parse_uri, relative_to_namespace

if TYPE_CHECKING:
    from .azure import AzureBlockstore
    from .gcs import GCSBlockstore

__all__ = [
    "AUTO_CAP",
    "AUTO_START",
    "DEFAULT_MAX_BYTES_IN_FLIGHT",
    "AzureBlockstore",
    "Blockstore",
    "BucketNotFound",
    "ByteBudget",
    "Check",
    "ChecksumMismatchError",
    "CopiesInFlight",
    "CopyResult",
    "CopyTask",
    "GCSBlockstore",
    "InFlightFigures",
    "InvalidStorageURI",
    "LocalBlockstore",
    "ObjectInfo",
    "ObjectNotFound",
    "ObjectStat",
    "PathEscapeError",
    "ReadableStream",
    "S3Blockstore",
    "SizeMismatchError",
    "StorageAccessError",
    "StorageConfigError",
    "StorageError",
    "StorageURI",
    "StoreRegistry",
    "StoreSpec",
    "ThrottledReader",
    "TokenBucket",
    "TransferFailure",
    "TransferPool",
    "TransferSummary",
    "TransientStorageError",
    "UnsupportedStorageError",
    "at_rest_check",
    "build_blockstore",
    "copy_object",
    "fixed_workers",
    "join_namespace",
    "listed_stats",
    "parse_uri",
    "process_limiter",
    "relative_to_namespace",
    "throttled",
]


def __getattr__(name: str) -> Any:
    """The GCS and Azure stores load their SDKs (most of a second) only when first asked for."""
    from ..errors import needs_extra

    if name == "AzureBlockstore":
        with needs_extra("azure", "AzureBlockstore"):
            from .azure import AzureBlockstore

        return AzureBlockstore
    if name == "GCSBlockstore":
        with needs_extra("gcs", "GCSBlockstore"):
            from .gcs import GCSBlockstore

        return GCSBlockstore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
