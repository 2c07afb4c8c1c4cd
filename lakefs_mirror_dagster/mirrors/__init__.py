"""The mirrors database: mirror definitions and lifecycle, per-branch state, validated-ranges cache,
garbage-collection marks, the refs in flight.

All regions share it (PostgreSQL or DynamoDB), or one machine keeps it in a SQLite file.
``open_mirrors_database`` opens the one the config names: ``MirrorStore`` (``sql/``) or ``DynamoMirrorStore``
(``dynamodb/``), both ``MirrorsDatabase``; they return plain dataclasses and raise the errors below.
"""

from .database import MirrorsDatabase, open_mirrors_database
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
from .in_flight_model import RefInFlight
from .inputs import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
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
from .ref_kinds import REF_KINDS, RefKind
from .sql import MirrorStore
from .wakeups import RefWakeup

__all__ = [
    "ALLOWED_TRANSITIONS",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "REF_KINDS",
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
    "MirrorsDatabase",
    "MirrorsDatabaseError",
    "MirrorsDatabaseUnavailable",
    "NamespaceInUse",
    "NamespaceOverlap",
    "Organization",
    "RefInFlight",
    "RefKind",
    "RefWakeup",
    "key_fingerprint",
    "new_mirror_id",
    "open_mirrors_database",
    "validation_namespace",
]
