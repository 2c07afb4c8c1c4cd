"""What both S3 request paths share: which S3 error answers are worth retrying, and the proxy check.

boto3 serves listings, server-side copies and bucket calls; object GET, PUT (single and multipart) and HEAD go
through obstore (``s3_native``) unless a proxy is configured. obstore's error answers (``native.ErrorResponse``)
become the botocore error boto3 would have raised (``as_client_error``), so one mapping (``s3_errors``) serves
both.
"""

from __future__ import annotations

import urllib.request
from typing import Any
from urllib.parse import urlsplit

import botocore.exceptions

from .native import ErrorResponse

__all__ = [
    "TRANSIENT_CODES",
    "as_client_error",
    "is_transient",
    "uses_proxy",
]

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


def is_transient(status: object, code: str) -> bool:
    """Whether an S3 error answer may succeed when retried: both request paths (and the error mapping) agree."""
    return code in TRANSIENT_CODES or status == 429 or (isinstance(status, int) and status >= 500)


def uses_proxy(endpoint_url: str) -> bool:
    """Whether the environment sends requests to ``endpoint_url`` through a proxy (then boto3 keeps them)."""
    parts = urlsplit(endpoint_url)
    proxies = urllib.request.getproxies()
    return bool(proxies.get(parts.scheme)) and not urllib.request.proxy_bypass(parts.hostname or "")


def as_client_error(exc: ErrorResponse, operation: str) -> botocore.exceptions.ClientError:
    """The botocore error boto3 would have raised, so one error mapping serves both request paths."""
    details: Any = {
        "Error": {"Code": exc.code, "Message": exc.message},
        "ResponseMetadata": {"HTTPStatusCode": exc.status},
    }
    return botocore.exceptions.ClientError(details, operation)
