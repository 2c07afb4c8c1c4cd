"""Commit-exact mirroring of lakeFS repositories across regions and storage systems, orchestrated by Dagster.

The Dagster API (the Component, the ``Definitions`` factory, the resources) is imported on first use, so the CLI
and the engine never pay for importing Dagster.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .orchestration.component import LakeFSMirrorComponent
    from .orchestration.definitions import lakefs_mirror_definitions
    from .orchestration.history import mirror_history
    from .orchestration.mirroring.spark import SparkValidatorResource
    from .orchestration.options import MirrorDefsOptions
    from .orchestration.resources import ReplicationResource

_LAZY = {
    "LakeFSMirrorComponent": ".orchestration.component",
    "lakefs_mirror_definitions": ".orchestration.definitions",
    "mirror_history": ".orchestration.history",
    "MirrorDefsOptions": ".orchestration.options",
    "ReplicationResource": ".orchestration.resources",
    "SparkValidatorResource": ".orchestration.mirroring.spark",
}

__all__ = [
    "LakeFSMirrorComponent",
    "MirrorDefsOptions",
    "ReplicationResource",
    "SparkValidatorResource",
    "__version__",
    "lakefs_mirror_definitions",
    "mirror_history",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
