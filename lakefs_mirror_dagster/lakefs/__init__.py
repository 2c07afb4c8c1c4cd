"""Typed access to lakeFS installations (one client per region)."""

from .client import LakeFSClient
from .errors import (
    LakeFSBadRequest,
    LakeFSConflict,
    LakeFSError,
    LakeFSForbidden,
    LakeFSGone,
    LakeFSNotFound,
    LakeFSUnauthorized,
    LakeFSUnavailable,
)
from .models import Commit, Ref, Repository

__all__ = [
    "Commit",
    "LakeFSBadRequest",
    "LakeFSClient",
    "LakeFSConflict",
    "LakeFSError",
    "LakeFSForbidden",
    "LakeFSGone",
    "LakeFSNotFound",
    "LakeFSUnauthorized",
    "LakeFSUnavailable",
    "Ref",
    "Repository",
]
