"""What the commands share: the ``--config`` config loaded (its logging applied), a service over it, and a
mirror named on the command line resolved to one of this region."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..logs import load_config_with_logging
from .mirror_arg import resolve_mirror

__all__ = ["load_cli_config", "load_service", "mirror_of_this_region", "no_such_mirror"]


def load_cli_config(args: argparse.Namespace) -> Any:
    """The ``--config`` config, its ``logging`` section applied (every command that loads one comes here)."""
    return load_config_with_logging(args.config)


def load_service(args: argparse.Namespace) -> Any:
    from ..region import ReplicationService

    return ReplicationService(load_cli_config(args))


def mirror_of_this_region(service: Any, value: str) -> str:
    """The name of this region's mirror named ``value`` by name or id (what the engine's calls take)."""
    return str(resolve_mirror(service, value, region=service.config.region).name)


def no_such_mirror(name: str, region: str) -> None:
    """The one line a command prints when ``--mirror`` names no mirror of this region."""
    print(f"lakefs-mirror: no mirror named {name!r} in region {region}", file=sys.stderr)
