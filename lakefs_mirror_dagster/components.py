"""The ``dg`` registry module (entry point ``dagster_dg_cli.registry_modules``): the Components this package
offers to ``dg list components`` and ``dg scaffold defs``."""

from .orchestration.component import LakeFSMirrorComponent

__all__ = ["LakeFSMirrorComponent"]
