"""The REST API's error answer: an HTTP status and the message the caller sees.

Its own module so the app and the routes it registers from other modules (hooks) both raise it without
importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import LakeFSMirrorError

__all__ = ["ApiError"]


class ApiError(LakeFSMirrorError):
    """An error answer: HTTP status and the message the caller sees."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})
