"""Blockstores: one interface over S3 (and S3-compatible endpoints), local directories, GCS and Azure Blob.

The replication engine reads and writes objects by full storage URIs through ``Blockstore``; the
``StoreRegistry`` picks the store for a URI, and ``TransferPool`` copies many objects concurrently.
"""

from .azure import AzureBlockstore
from .base import Blockstore, ObjectInfo, ObjectStat, ReadableStream
from .errors import (
    BucketNotFound,
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
from .gcs import GCSBlockstore
from .local import LocalBlockstore
from .registry import StoreRegistry, build_blockstore, parse_size
from .s3 import S3Blockstore
from .transfer import CopyResult, CopyTask, TransferFailure, TransferPool, TransferSummary, copy_object
from .uri import StorageURI, join_namespace, parse_uri, relative_to_namespace

__all__ = [
    "AzureBlockstore",
    "Blockstore",
    "BucketNotFound",
    "CopyResult",
    "CopyTask",
    "GCSBlockstore",
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
    "TransferFailure",
    "TransferPool",
    "TransferSummary",
    "TransientStorageError",
    "UnsupportedStorageError",
    "build_blockstore",
    "copy_object",
    "join_namespace",
    "parse_size",
    "parse_uri",
    "relative_to_namespace",
]
