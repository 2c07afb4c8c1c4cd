"""The replication layer's own error: a mirror that cannot be synced as configured or as the source says."""

from __future__ import annotations

from ..errors import LakeFSMirrorError

__all__ = ["ReplicationError"]


class ReplicationError(LakeFSMirrorError, RuntimeError):
    """A mirror cannot be synced as configured (the message says what to fix)."""
