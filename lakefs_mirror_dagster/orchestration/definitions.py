"""The mirror definitions as plain ``Definitions``: the factory users call, and the package's own code location.

``lakefs_mirror_definitions`` gives every active mirror of the region its assets, checks, jobs and sensors, plus
the region's jobs and the mirrors-manager sensor, forcing no executor and binding resources under the caller's
keys; ``defs`` is that factory with the defaults. Importing does no I/O; building reads the config and the active
mirrors and, if either fails, builds the manager sensor only, which reports the problem at its first tick and
asks for a code location reload when the active set changes (``reload.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import dagster as dg

from ..config import ConfigError, ReplicationConfig, SparkConfig
from ..logs import load_config_with_logging, log_fields
from ..mirrors import MirrorState, open_mirrors_database
from ..region import missing_stores
from .options import DEFAULT_OPTIONS, MirrorDefsOptions
from .reload import Reload, reload_through, request_reload
from .resources import ReplicationResource, resolve_config_path

__all__ = [
    "DEFAULT_LOCATION_NAME",
    "build_definitions",
    "defs",
    "discover_mirrors",
    "lakefs_mirror_definitions",
    "load_region_config",
]

log = logging.getLogger(__name__)

DEFAULT_LOCATION_NAME = "lakefs_mirror"


def discover_mirrors(config: ReplicationConfig) -> list[str]:
    """Names of this region's active mirrors of this organisation, read from the mirrors database (no lakeFS
    calls). A mirror whose store the config no longer has gets no asset (the manager sensor marks it failed)."""
    with open_mirrors_database(config.mirrors_database, create_tables=False) as store:
        active = list(
            store.iter_mirrors(
                organization_id=config.organization_id,
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
    reload: Reload | None = request_reload,
    track_mirrors: bool = True,
    spark_conf: dict[str, str] | None = None,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
    bind_resources: bool = True,
) -> dg.Definitions:
    """The definitions of ``mirrors``: each domain's (mirroring, refs migration, scrub, GC deletions) merged, and
    with ``bind_resources`` the two resources they use, under ``options``' keys. ``config_path`` is what the
    replication resource reads at run time (empty: ``$LAKEFS_MIRROR_CONFIG``); ``config`` supplies sensor
    intervals, schedules and Spark settings (defaults when None)."""
    from .gc_deletions import gc_deletions_definitions
    from .mirroring.definitions import mirroring_definitions
    from .mirroring.spark import SparkValidatorResource
    from .refs_migration import refs_migration_definitions
    from .scrub import scrub_definitions

    mirroring = mirroring_definitions(
        mirrors,
        config=config,
        location_name=location_name,
        reload=reload,
        track_mirrors=track_mirrors,
        options=options,
    )
    parts = [mirroring, refs_migration_definitions(options), scrub_definitions(options)]
    parts.append(gc_deletions_definitions(config, options))
    if bind_resources:
        spark = SparkValidatorResource.from_config(
            config.spark if config else SparkConfig(), config.validator.num_workers if config else 3, spark_conf
        )
        replication = ReplicationResource(config_path=config_path)
        parts.append(dg.Definitions(resources={options.resource_key: replication, options.spark_resource_key: spark}))
    return dg.Definitions.merge(*parts)


def load_region_config(path: str) -> ReplicationConfig | None:
    """The config, its ``logging`` section applied to this process (a code server, or a run worker, which loads
    the definitions too); ``None`` if it is not usable (the reason is logged)."""
    try:
        return load_config_with_logging(path or None)
    except Exception as exc:
        log.warning("lakefs-mirror: replication config %s not usable (%s); no mirror assets loaded", path, exc)
        return None


def active_mirrors(config: ReplicationConfig | None) -> list[str]:
    """``discover_mirrors``, or no mirror when the database cannot be read (the manager sensor then says why);
    a mirror whose store the config lost stops the load (the UI shows why)."""
    if config is None:
        return []
    try:
        return discover_mirrors(config)
    except ConfigError:
        raise
    except Exception as exc:
        log.warning("lakefs-mirror: mirrors database not readable (%s); no mirror assets loaded", exc)
        return []


def lakefs_mirror_definitions(
    *,
    config_path: str = "",
    mirrors: Sequence[str] | None = None,
    key_prefix: Sequence[str] = DEFAULT_OPTIONS.key_prefix,
    group_name: str = DEFAULT_OPTIONS.group_name,
    resource_key: str = DEFAULT_OPTIONS.resource_key,
    spark_resource_key: str = DEFAULT_OPTIONS.spark_resource_key,
    bind_resources: bool = True,
    dagster_url: str = "",
    location_name: str = DEFAULT_LOCATION_NAME,
    track_mirrors: bool | None = None,
) -> dg.Definitions:
    """Mirroring for a Dagster project's own ``Definitions`` (merge it with yours).

    ``config_path``: the region's replication YAML (empty: ``$LAKEFS_MIRROR_CONFIG``). ``mirrors``: their names
    (default: every active mirror of the region, read from the mirrors database now). ``key_prefix``,
    ``group_name``: where the assets go. ``resource_key``, ``spark_resource_key``: the keys the definitions ask
    for; with ``bind_resources`` they are bound here, else bind a ``ReplicationResource`` and a
    ``SparkValidatorResource`` yourself. ``dagster_url``: the webserver the manager sensor asks to reload the code
    location when mirrors are created or deleted (default: ``$LAKEFS_MIRROR_DAGSTER_URL``). ``track_mirrors``:
    whether that sensor compares the region's active mirrors with these (default: only when ``mirrors`` is None).
    """
    options = MirrorDefsOptions(
        key_prefix=tuple(key_prefix),
        group_name=group_name,
        resource_key=resource_key,
        spark_resource_key=spark_resource_key,
    )
    path = resolve_config_path(config_path)
    config = load_region_config(path) if path else None
    names = list(mirrors) if mirrors is not None else active_mirrors(config)
    return build_definitions(
        names,
        config=config,
        config_path=path,
        location_name=location_name,
        reload=reload_through(dagster_url),
        track_mirrors=mirrors is None if track_mirrors is None else track_mirrors,
        options=options,
        bind_resources=bind_resources,
    )


@dg.definitions
def defs() -> dg.Definitions:
    """The package's own code location; Dagster calls it when the location loads (and on every reload)."""
    return lakefs_mirror_definitions()
