"""One error hierarchy for every blockstore, so callers never see boto3 or OS exception types.

Messages name the operation and the URI but never credentials; ``transient`` tells retry loops
whether trying again can help.
"""

from __future__ import annotations

from ..errors import LakeFSMirrorError

__all__ = [
    "BucketNotFound",
    "ChecksumMismatchError",
    "InvalidStorageURI",
    "ObjectNotFound",
    "PathEscapeError",
    "SizeMismatchError",
    "StorageAccessError",
    "StorageConfigError",
    "StorageError",
    "TransientStorageError",
    "UnsupportedStorageError",
]


class StorageError(LakeFSMirrorError):
    """Base class of every storage failure; ``uri`` is the object concerned, when there is one."""

    transient: bool = False

    def __init__(self, message: str, *, uri: str | None = None) -> None:
        super().__init__(message)
        self.uri = uri


class ObjectNotFound(StorageError):
    """The object (or its container) does not exist."""


class BucketNotFound(ObjectNotFound):
    """The S3 bucket named by the URI does not exist at the endpoint."""


class StorageAccessError(StorageError):
    """Credentials are missing, invalid, or not allowed to do the operation."""


class TransientStorageError(StorageError):
    """Throttling, server errors, timeouts, dropped connections: worth retrying later."""

    transient = True


class SizeMismatchError(StorageError):
    """A stream delivered a different number of bytes than the size it was announced with."""


class ChecksumMismatchError(StorageError):
    """Bytes that match no checksum lakeFS could have recorded for the object: damaged in transit (worth
    another try) or at rest, or a multipart layout not tried yet. ``content_md5`` is the MD5 of the bytes
    that were read, when they were read whole."""

    transient = True

    def __init__(self, message: str, *, uri: str | None = None, content_md5: str | None = None) -> None:
        super().__init__(message, uri=uri)
        self.content_md5 = content_md5


class InvalidStorageURI(StorageError, ValueError):
    """A URI that cannot name an object in this store (bad syntax, wrong scheme, ...)."""


class PathEscapeError(InvalidStorageURI):
    """A local URI that would resolve outside the store's root directory."""


class StorageConfigError(StorageError, ValueError):
    """Store settings that cannot build a working blockstore."""


class UnsupportedStorageError(StorageError, NotImplementedError):
    """A storage type or scheme this package does not implement (e.g. lakeFS's ``mem`` and ``transient``)."""
