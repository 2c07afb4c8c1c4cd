"""The mirrors database: mirror definitions and lifecycle, per-branch state, validated-ranges cache.

All regions share it (PostgreSQL), or one machine keeps it in a SQLite file. ``MirrorStore`` is the only
entry point; it returns plain dataclasses and raises the errors below.
"""

from .errors import (
    ConcurrentUpdate,
    InvalidMirrorSpec,
    InvalidStateTransition,
    MirrorExists,
    MirrorNotFound,
    MirrorsDatabaseError,
    MirrorsDatabaseUnavailable,
    NamespaceInUse,
    NamespaceOverlap,
)
from .models import (
    ALLOWED_TRANSITIONS,
    Mirror,
    MirrorBranch,
    MirrorPage,
    MirrorState,
    new_mirror_id,
    validation_namespace,
)
from .organizations import Organization, key_fingerprint
from .store import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MirrorStore

__all__ = [
    "ALLOWED_TRANSITIONS",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "ConcurrentUpdate",
    "InvalidMirrorSpec",
    "InvalidStateTransition",
    "Mirror",
    "MirrorBranch",
    "MirrorExists",
    "MirrorNotFound",
    "MirrorPage",
    "MirrorState",
    "MirrorStore",
    "MirrorsDatabaseError",
    "MirrorsDatabaseUnavailable",
    "NamespaceInUse",
    "NamespaceOverlap",
    "Organization",
    "key_fingerprint",
    "new_mirror_id",
    "validation_namespace",
]
