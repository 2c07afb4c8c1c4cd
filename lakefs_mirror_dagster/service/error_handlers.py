"""How every exception a route raises becomes the API's JSON answer ``{"message": ...}``.

Any ``LakeFSMirrorError`` (an expected failure) gets the one status its kind has and no traceback in the log;
bad input is a 400 naming every bad field (never FastAPI's 422); only a bug is a 500, logged with its traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..config import ConfigError
from ..errors import LakeFSMirrorError
from ..lakefs import LakeFSBadRequest, LakeFSError, LakeFSNotFound, LakeFSUnavailable
from ..mirrors import (
    ConcurrentUpdate,
    InvalidMirrorSpec,
    InvalidStateTransition,
    MirrorExists,
    MirrorNotFound,
    MirrorsDatabaseError,
    NamespaceInUse,
)
from ..replication import ReplicationError
from ..storage import InvalidStorageURI, StorageError
from .api_errors import ApiError

__all__ = ["add_error_handlers"]

log = logging.getLogger(__name__)


def _error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status, headers=dict(headers or {}))


def _validation_message(exc: RequestValidationError) -> str:
    """One line naming every bad field, e.g. ``body.name: String should match pattern ...``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        if err.get("type") == "json_invalid":
            parts.append(f"malformed JSON body: {err.get('ctx', {}).get('error', 'cannot parse')}")
        elif err.get("type") == "missing":
            parts.append(f"{loc}: required field is missing")
        else:
            parts.append(f"{loc}: {err.get('msg', 'invalid')} (got {err.get('input')!r})")
    return "invalid request: " + "; ".join(parts) if parts else "invalid request"


def _map_service_error(exc: LakeFSMirrorError) -> ApiError:
    """The one status per expected failure: the caller's mistake 4xx, an upstream's (lakeFS, a store, the
    mirrors database) 502/503, and 500 only for one this table does not name."""
    if isinstance(exc, ApiError):
        return exc
    msg = str(exc)
    if isinstance(exc, LakeFSNotFound):
        return ApiError(404, msg)
    if isinstance(exc, ConfigError | InvalidMirrorSpec | LakeFSBadRequest | InvalidStorageURI):
        return ApiError(400, msg)
    if isinstance(exc, NamespaceInUse | MirrorExists | ReplicationError | ConcurrentUpdate | InvalidStateTransition):
        return ApiError(409, msg)
    if isinstance(exc, MirrorNotFound):
        return ApiError(404, msg)
    if isinstance(exc, LakeFSUnavailable | MirrorsDatabaseError):
        return ApiError(503, msg)
    if isinstance(exc, StorageError):
        return ApiError(503 if exc.transient else 502, msg)
    if isinstance(exc, LakeFSError):
        return ApiError(502, msg)
    return ApiError(500, msg)


def add_error_handlers(app: FastAPI) -> None:
    """Register on ``app`` the handlers that turn every exception into its JSON answer."""

    @app.exception_handler(LakeFSMirrorError)
    def _expected(request: Request, exc: LakeFSMirrorError) -> JSONResponse:
        answer = _map_service_error(exc)
        if answer.status >= 500:  # worth an operator's look, but expected: one line, no traceback
            log.warning("%s %s: %s %s", request.method, request.url.path, answer.status, answer.message)
        return _error_response(answer.status, answer.message, answer.headers)

    @app.exception_handler(RequestValidationError)
    def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error_response(400, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error_response(exc.status_code, str(exc.detail), exc.headers)

    @app.exception_handler(Exception)
    def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _error_response(500, f"internal error: {type(exc).__name__}")
