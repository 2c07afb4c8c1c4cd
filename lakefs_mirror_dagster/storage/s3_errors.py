"""How boto3, botocore and urllib3 errors from S3 map onto the storage error hierarchy."""

from __future__ import annotations

import botocore.exceptions
import urllib3.exceptions

from .errors import (
    BucketNotFound,
    InvalidStorageURI,
    ObjectNotFound,
    StorageAccessError,
    StorageError,
    TransientStorageError,
)
from .s3_direct import is_transient
from .uri import parse_uri

__all__ = ["ACCESS_CODES", "map_s3_error"]

_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NotFound", "404", "NoSuchVersion"})
#: Error codes S3 and compatible stores answer when the credentials may not do something.
ACCESS_CODES = frozenset(
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
        if code in ACCESS_CODES or status == 403:
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
