"""``LakeFSMirrorComponent``: mirroring as a ``dg`` Component (``dg scaffold defs
lakefs_mirror_dagster.components.LakeFSMirrorComponent mirrors``, then a ``defs.yaml``).

The region's active mirrors are the component's state (a state-backed component): Dagster refreshes it the way it
refreshes every state-backed component (by default at each load of the code server, with the mirror list then
pinned for the runs planned against it; or ``dg utils refresh-defs-state`` with the other ``defs_state``
management types), and builds the definitions from it with ``lakefs_mirror_definitions``. A mirror created or
deleted later makes the mirrors-manager sensor ask for a reload (``dagster_url``), which refreshes the state.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import dagster as dg
from dagster.components import DefsStateConfig, DefsStateConfigArgs, ResolvedDefsStateConfig
from pydantic import Field

from .definitions import active_mirrors, lakefs_mirror_definitions, load_region_config
from .options import DEFAULT_OPTIONS
from .resources import resolve_config_path

__all__ = ["LakeFSMirrorComponent"]

log = logging.getLogger(__name__)


class LakeFSMirrorComponent(dg.StateBackedComponent, dg.Model, dg.Resolvable):
    """Mirrors of lakeFS repositories into this region: per mirror its source repository, branch heads (one
    partition per branch) and tags as assets, with the blocking ``ranges_validated`` check, the commit sensor and
    the mirrors-manager sensor; the region's scrub, GC-deletions and refs-migration jobs."""

    config_path: str = Field(
        default="",
        description="The region's replication YAML (empty: $LAKEFS_MIRROR_CONFIG, then $REPLICATION_CONFIG).",
    )
    key_prefix: list[str] = Field(
        default_factory=lambda: list(DEFAULT_OPTIONS.key_prefix),
        description="Asset keys are <key_prefix>/<mirror>/branch_heads|tags|source; sensors and jobs are named "
        "after it.",
    )
    group_name: str = Field(default=DEFAULT_OPTIONS.group_name, description="The asset group of the mirror assets.")
    resource_key: str = Field(
        default=DEFAULT_OPTIONS.resource_key, description="The key of the replication resource the definitions bind."
    )
    spark_resource_key: str = Field(
        default=DEFAULT_OPTIONS.spark_resource_key, description="The key of the Spark validator resource."
    )
    dagster_url: str = Field(
        default="",
        description="The webserver asked to reload the code location when mirrors are created or deleted "
        "(empty: $LAKEFS_MIRROR_DAGSTER_URL; unset: the manager sensor asks an operator to reload).",
    )
    defs_state: ResolvedDefsStateConfig = Field(
        default_factory=DefsStateConfigArgs.legacy_code_server_snapshots,
        description="How the mirror list is kept (Dagster's state-backed components); by default it is read "
        "from the mirrors database at each load of the code server.",
    )

    @property
    def defs_state_config(self) -> DefsStateConfig:
        return DefsStateConfig.from_args(
            self.defs_state, default_key=f"LakeFSMirrorComponent[{'/'.join(self.key_prefix)}]"
        )

    def write_state_to_path(self, state_path: Path) -> None:
        """The region's active mirrors, as a JSON list of names (none when the config or database is unusable:
        the manager sensor then says why at its first tick)."""
        path = resolve_config_path(self.config_path)
        mirrors = active_mirrors(load_region_config(path)) if path else []
        state_path.write_text(json.dumps({"mirrors": mirrors}))

    def build_defs_from_state(self, context: dg.ComponentLoadContext, state_path: Path | None) -> dg.Definitions:
        mirrors: list[str] = json.loads(state_path.read_text())["mirrors"] if state_path is not None else []
        return lakefs_mirror_definitions(
            config_path=self.config_path,
            mirrors=mirrors,
            key_prefix=self.key_prefix,
            group_name=self.group_name,
            resource_key=self.resource_key,
            spark_resource_key=self.spark_resource_key,
            dagster_url=self.dagster_url,
            track_mirrors=True,
        )
