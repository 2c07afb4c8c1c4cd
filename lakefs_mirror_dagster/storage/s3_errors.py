"""How S3's errors map onto the storage error hierarchy, whichever request path met them.

An S3 answer arrives as a botocore ``ClientError`` (boto3) or as a ``native.ErrorResponse`` (obstore, and the
presigned requests of ``s3_native``); both are read as the same ``S3Answer``, so one mapping serves both paths.
"""

from __future__ import annotations

from typing import NamedTuple

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
from .native import ErrorResponse
from .uri import parse_uri

__all__ = ["ACCESS_CODES", "TRANSIENT_CODES", "S3Answer", "is_transient", "map_s3_error", "s3_answer"]

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
#: S3 error codes worth retrying, whatever the HTTP status.
TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestTimeout",
        "RequestLimitExceeded",
        "InternalError",
        "ServiceUnavailable",
        "XMinioServerNotInitialized",
        "OperationAborted",
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


class S3Answer(NamedTuple):
    """What an S3 error answer says: its HTTP status, error code and message (never request headers)."""

    status: int | None
    code: str
    message: str


def s3_answer(exc: BaseException) -> S3Answer | None:
    """The S3 answer ``exc`` carries (boto3's ``ClientError``, obstore's ``ErrorResponse``), None for any other."""
    if isinstance(exc, ErrorResponse):
        return S3Answer(exc.status, exc.code, exc.message)
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return S3Answer(status, str(error.get("Code", "")), str(error.get("Message", "") or ""))
    return None


def is_transient(status: object, code: str) -> bool:
    """Whether an S3 error answer may succeed when retried."""
    return code in TRANSIENT_CODES or status == 429 or (isinstance(status, int) and status >= 500)


def map_s3_error(exc: BaseException, operation: str, uri: str, where: str = "") -> StorageError:
    """Map an S3 answer, or a boto3/botocore/urllib3/obstore failure, to the storage hierarchy.

    Only the S3 error code and message are used: they never contain credentials (the full response can
    carry a string-to-sign, which is not copied).
    """
    at = f" at {where}" if where else ""
    if isinstance(exc, StorageError):
        return exc
    answer = s3_answer(exc)
    if answer is not None:
        status, code, message = answer
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
