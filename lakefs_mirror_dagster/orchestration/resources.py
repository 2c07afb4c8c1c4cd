"""``ReplicationResource``: the region's ``ReplicationService``, built on first use and never at load."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field, PrivateAttr

from ..config import CONFIG_PATH_ENV, ReplicationConfig, load_config
from ..mirrors import Mirror, MirrorState
from ..region import ReplicationService

__all__ = ["CONFIG_ENV", "ReplicationResource", "resolve_config_path"]

#: Where the code location finds the region's replication YAML (``REPLICATION_CONFIG`` is the fallback).
CONFIG_ENV = "LAKEFS_MIRROR_CONFIG"


def resolve_config_path(config_path: str = "") -> str:
    """``config_path`` if set, else ``$LAKEFS_MIRROR_CONFIG``, else ``$REPLICATION_CONFIG``, else ``""``."""
    return config_path or os.environ.get(CONFIG_ENV, "") or os.environ.get(CONFIG_PATH_ENV, "")


class ReplicationResource(dg.ConfigurableResource):
    """One region's replication service (lakeFS clients, stores, mirrors database), cached per process.

    Nothing is opened when the resource is constructed, so definitions load without the config file,
    the lakeFS servers or the mirrors database being reachable.
    """

    config_path: str = Field(
        default="",
        description=(
            f"The region's replication YAML; empty means ${CONFIG_ENV}, then ${CONFIG_PATH_ENV} "
            "(REPLICATION_* variables override fields either way)."
        ),
    )
    _service: ReplicationService | None = PrivateAttr(default=None)

    def resolved_config_path(self) -> str:
        return resolve_config_path(self.config_path)

    def load_config(self) -> ReplicationConfig:
        """Read the config now; raises ``ConfigError`` naming the field, or naming the missing file."""
        path = self.resolved_config_path()
        if path and not Path(path).expanduser().is_file():
            raise dg.DagsterInvariantViolationError(
                f"replication config {path} does not exist (set {CONFIG_ENV} or the resource's config_path)"
            )
        return load_config(path or None)

    def service(self) -> ReplicationService:
        """The cached service; the first call reads the config and opens the mirrors database."""
        if self._service is None:
            self._service = ReplicationService(self.load_config())
        return self._service

    def mirror(self, name: str) -> Mirror:
        """This region's mirror called ``name``; ``dg.Failure`` when the mirrors database has none."""
        service = self.service()
        found = next(service.my_mirrors(name=name), None)
        if found is None:
            raise dg.Failure(
                f"no mirror named {name!r} in region {service.config.region} (deleted, or another region's)"
            )
        return found

    def active_mirror(self, name: str) -> Mirror:
        mirror = self.mirror(name)
        if mirror.state != MirrorState.ACTIVE:
            raise dg.Failure(
                f"mirror {name} is {mirror.state.value}, not active"
                + (f": {mirror.message}" if mirror.message else "")
                + "; the mirrors-manager sensor activates pending mirrors"
            )
        return mirror

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None
