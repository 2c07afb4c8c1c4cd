"""One exception hierarchy for every lakeFS call, so callers branch on meaning, not on status codes."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..backoff import retry_after_seconds
from ..errors import LakeFSMirrorError

__all__ = [
    "LakeFSBadRequest",
    "LakeFSConflict",
    "LakeFSError",
    "LakeFSForbidden",
    "LakeFSGone",
    "LakeFSNotFound",
    "LakeFSUnauthorized",
    "LakeFSUnavailable",
    "error_for_status",
]


class LakeFSError(LakeFSMirrorError, RuntimeError):
    """A lakeFS request failed. ``status`` is the HTTP status (0 when the server was unreachable)."""

    def __init__(self, message: str, *, status: int = 0, endpoint: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint


class LakeFSBadRequest(LakeFSError):
    """400: the request was invalid (e.g. a commit record whose fields do not hash to its ID)."""


class LakeFSUnauthorized(LakeFSError):
    """401: the credentials were not accepted."""


class LakeFSForbidden(LakeFSError):
    """403: not allowed, e.g. a write to a read-only repository without ``force``."""


class LakeFSNotFound(LakeFSError):
    """404: repository, ref, commit or object does not exist."""


class LakeFSConflict(LakeFSError):
    """409: already exists (a commit record, branch, tag or repository)."""


class LakeFSGone(LakeFSError):
    """410: lakeFS knows the object but its data is missing from storage."""


class LakeFSUnavailable(LakeFSError):
    """429/5xx or a connection failure: worth retrying later, after ``retry_after`` seconds when lakeFS (or a
    proxy in front of it) sent ``Retry-After``."""

    def __init__(self, message: str, *, status: int = 0, endpoint: str = "", retry_after: float | None = None) -> None:
        super().__init__(message, status=status, endpoint=endpoint)
        self.retry_after = retry_after


_BY_STATUS: dict[int, type[LakeFSError]] = {
    400: LakeFSBadRequest,
    401: LakeFSUnauthorized,
    403: LakeFSForbidden,
    404: LakeFSNotFound,
    409: LakeFSConflict,
    410: LakeFSGone,
}


def error_for_status(
    status: int,
    body: bytes | str | None,
    *,
    endpoint: str,
    what: str,
    headers: Mapping[str, str] | None = None,
) -> LakeFSError:
    """Build the matching exception, quoting lakeFS's own ``message`` when it sent one (and, for a retryable
    answer, its ``Retry-After`` header)."""
    detail = ""
    if body:
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        try:
            detail = str(json.loads(text).get("message", ""))
        except (ValueError, AttributeError):
            detail = text[:300]
    cls = _BY_STATUS.get(status, LakeFSUnavailable if status == 429 or status >= 500 else LakeFSError)
    message = f"{what}: lakeFS at {endpoint} answered {status}" + (f": {detail}" if detail else "")
    if cls is LakeFSUnavailable:
        wait = retry_after_seconds((headers or {}).get("Retry-After"))
        return LakeFSUnavailable(message, status=status, endpoint=endpoint, retry_after=wait)
    return cls(message, status=status, endpoint=endpoint)
