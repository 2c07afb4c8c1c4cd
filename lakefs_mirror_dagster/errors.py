"""The one root of every error this package raises on purpose.

Each room (``config``, ``storage``, ``lakefs``, ``graveler``, ``mirrors``, ``replication``, ``refs``, ``spark``,
``devenv``) keeps its own ``errors.py`` whose classes derive from ``LakeFSMirrorError``, so the CLI and the REST
API can catch one class, print one line and never show a traceback for a failure they expected.
"""

from __future__ import annotations

__all__ = ["LakeFSMirrorError"]


class LakeFSMirrorError(Exception):
    """Base of every expected failure of lakefs-mirror-dagster."""
