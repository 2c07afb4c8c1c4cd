"""Errors of the mirrors database, one type per outcome a caller handles differently."""

from __future__ import annotations

from ..errors import LakeFSMirrorError

__all__ = [
    "ConcurrentUpdate",
    "InvalidMirrorSpec",
    "InvalidStateTransition",
    "MirrorExists",
    "MirrorNotFound",
    "MirrorsDatabaseError",
    "MirrorsDatabaseUnavailable",
    "NamespaceInUse",
    "NamespaceOverlap",
]


class MirrorsDatabaseError(LakeFSMirrorError):
    """Base of every error raised by the mirrors database."""


class MirrorsDatabaseUnavailable(MirrorsDatabaseError):
    """The database itself failed (down, refused, wrong password, busy past the retries): nothing can go on
    without it, unlike the errors below, which are about one mirror or one request."""


class InvalidMirrorSpec(MirrorsDatabaseError, ValueError):
    """An argument is malformed (bad name, namespace, state...); the message names the field."""


class MirrorNotFound(MirrorsDatabaseError, LookupError):
    """No mirror with the given id (or region and name)."""

    def __init__(self, message: str, *, mirror_id: str | None = None) -> None:
        super().__init__(message)
        self.mirror_id = mirror_id


class MirrorExists(MirrorsDatabaseError):
    """A mirror with this name already exists in the destination region (or the id is taken)."""

    def __init__(self, message: str, *, existing_id: str | None = None) -> None:
        super().__init__(message)
        self.existing_id = existing_id


class NamespaceInUse(MirrorsDatabaseError):
    """Another mirror in the destination region already writes to this storage namespace."""

    def __init__(self, message: str, *, existing_id: str | None = None) -> None:
        super().__init__(message)
        self.existing_id = existing_id


class NamespaceOverlap(InvalidMirrorSpec):
    """The storage namespace contains, or lies inside, another repository's or mirror's namespace in the
    region: anything that lists the outer one (cleanup, garbage collection) would reach the inner one."""


class ConcurrentUpdate(MirrorsDatabaseError):
    """A compare-and-set lost: the mirror changed since the generation the caller read."""

    def __init__(self, message: str, *, mirror_id: str, expected: int | None, actual: int | None) -> None:
        super().__init__(message)
        self.mirror_id = mirror_id
        self.expected = expected
        self.actual = actual


class InvalidStateTransition(MirrorsDatabaseError, ValueError):
    """The requested state cannot follow the mirror's current state (e.g. ``deleted`` -> ``active``)."""
