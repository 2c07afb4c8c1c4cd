"""Errors of refs migration and mirror promotion; each message names what is wrong and what to do."""

from __future__ import annotations

from ..replication import ReplicationError

__all__ = ["ManifestError", "RefsError"]


class RefsError(ReplicationError):
    """A dump, restore, copy or promotion cannot go ahead (or failed and was rolled back).

    A ``ReplicationError`` so the CLI reports it like every other operator error (exit status 2).
    """


class ManifestError(RefsError):
    """A manifest file is unreadable, not JSON, or lacks a field the restore needs."""
