"""The Dagster code location (``workspace.yaml`` and ``[tool.dg]`` point here).

Importing this module does no I/O at all. Loading the definitions (``defs()``, which Dagster calls when
the code server starts or reloads) reads the replication config file and lists this region's active
mirrors from the mirrors database, tolerating failure of either: it then builds the manager sensor only,
and that sensor reports the problem at its first tick. Each active mirror gets its ``branch_heads``
and ``tags`` assets and its commit sensor.

When a mirror is created or deleted at run time, the manager sensor notices that the active set differs
from the one these definitions were built for and asks Dagster to reload the code location
(``sensors/reload.py``). The mirror list is also stored as reconstruction metadata, so a run worker
rebuilds exactly the definitions its run was planned against, without reading the database.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Iterable

import dagster as dg
from dagster._core.definitions.definitions_load_context import DefinitionsLoadContext, DefinitionsLoadType

from ..config import ConfigError, ReplicationConfig
from ..logs import log_fields
from ..mirrors import MirrorState, open_mirrors_database
from ..replication.storages import missing_stores
from .reload import request_reload
from .resources import ReplicationResource, resolve_config_path

__all__ = ["DEFAULT_LOCATION_NAME", "MIRRORS_METADATA_KEY", "build_definitions", "defs", "discover_mirrors"]

log = logging.getLogger(__name__)

DEFAULT_LOCATION_NAME = "lakefs_mirror"
MIRRORS_METADATA_KEY = "lakefs_mirror/active_mirrors"


def discover_mirrors(config: ReplicationConfig) -> list[str]:
    """Names of this region's active mirrors, read from the mirrors database (no lakeFS calls).

    A mirror whose store the config no longer has gets no asset (the manager sensor marks it failed).
    """
    with open_mirrors_database(config.mirrors_database, create_tables=False) as store:
        active = list(
            store.iter_mirrors(
                destination_region=config.region,
                states=[MirrorState.ACTIVE],
                page_size=config.list_mirrors_page_size,
            )
        )
    missing = missing_stores(config, active)
    for mirror in (m for m in active if m.id in missing):
        where = log_fields(region=config.region, mirror=mirror.name, repository=mirror.source_repository)
        log.warning("not loading %s", missing[mirror.id], extra=where)
    return sorted(m.name for m in active if m.id not in missing)


def build_definitions(
    mirrors: Iterable[str],
    *,
    config: ReplicationConfig | None = None,
    config_path: str = "",
    location_name: str = DEFAULT_LOCATION_NAME,
    reload: Callable[[str], str] | None = request_reload,
    track_mirrors: bool = True,
    spark_conf: dict[str, str] | None = None,
) -> dg.Definitions:
    """The code location: each domain's definitions (mirroring, refs migration, GC deletions) merged, with the one
    resource they share. ``config_path`` is what the replication resource reads at run time (empty:
    ``$LAKEFS_MIRROR_CONFIG``); the other arguments go to ``mirroring_definitions``."""
    from .gc_deletions import gc_deletions_definitions
    from .mirroring.definitions import mirroring_definitions
    from .refs_migration import refs_migration_definitions
    from .scrub import scrub_definitions

    shared = dg.Definitions(
        resources={"replication": ReplicationResource(config_path=config_path)},
        # One step per run; in-process keeps one SparkSession per run worker.
        executor=dg.in_process_executor,
    )
    mirroring = mirroring_definitions(
        mirrors,
        config=config,
        location_name=location_name,
        reload=reload,
        track_mirrors=track_mirrors,
        spark_conf=spark_conf,
    )
    return dg.Definitions.merge(
        shared, mirroring, refs_migration_definitions(), scrub_definitions(), gc_deletions_definitions(config)
    )


def _load_config(path: str) -> ReplicationConfig | None:
    """The config, its ``logging`` section applied to this process (the code server, or a run worker, which
    loads the definitions too); ``None`` if it is not usable."""
    from ..config import load_config
    from ..logs import configure_logging

    try:
        config = load_config(path or None)
    except Exception as exc:
        log.warning("lakefs-mirror: replication config %s not usable (%s); no mirror assets loaded", path, exc)
        return None
    configure_logging(config.logging)
    return config


@dg.definitions
def defs() -> dg.Definitions:
    """Called by Dagster when the code location loads (and again on every reload)."""
    context = DefinitionsLoadContext.get()
    path = resolve_config_path()
    config = _load_config(path) if path else None
    mirrors: list[str] = []
    stored = (
        context.reconstruction_metadata.get(MIRRORS_METADATA_KEY)
        if context.load_type == DefinitionsLoadType.RECONSTRUCTION
        else None
    )
    if stored is not None:
        mirrors = json.loads(stored)
    elif config is not None:
        try:
            mirrors = discover_mirrors(config)
        except ConfigError:
            raise  # a mirror's store was removed: the location must not load without it (the UI shows why)
        except Exception as exc:
            log.warning("lakefs-mirror: mirrors database not readable (%s); no mirror assets loaded", exc)
    built = build_definitions(
        mirrors,
        config=config,
        config_path=path,
        location_name=context.code_location_name or DEFAULT_LOCATION_NAME,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.PreviewWarning)
        return built.with_reconstruction_metadata({MIRRORS_METADATA_KEY: json.dumps(mirrors)})
