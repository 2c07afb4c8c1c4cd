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

from .config import ConfigError, ReplicationConfig, SparkConfig, ValidatorConfig
from .mirrors import MirrorState, MirrorStore
from .replication.storages import missing_stores
from .resources import ReplicationResource, SparkValidatorResource, resolve_config_path
from .sensors.commits import build_commit_sensor
from .sensors.manager import build_mirrors_manager_sensor
from .sensors.reload import request_reload

__all__ = ["DEFAULT_LOCATION_NAME", "MIRRORS_METADATA_KEY", "build_definitions", "defs", "discover_mirrors"]

log = logging.getLogger(__name__)

DEFAULT_LOCATION_NAME = "lakefs_mirror"
MIRRORS_METADATA_KEY = "lakefs_mirror/active_mirrors"


def discover_mirrors(config: ReplicationConfig) -> list[str]:
    """Names of this region's active mirrors, read from the mirrors database (no lakeFS calls).

    A mirror whose store the config no longer has gets no asset (the manager sensor marks it failed).
    """
    with MirrorStore(config.mirrors_database.sqlalchemy_url, create_tables=False) as store:
        active = list(
            store.iter_mirrors(
                destination_region=config.region,
                states=[MirrorState.ACTIVE],
                page_size=config.list_mirrors_page_size,
            )
        )
    missing = missing_stores(config, active)
    for reason in missing.values():
        log.warning("not loading %s", reason)
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
    """Definitions for ``mirrors``: an asset and a commit sensor per mirror, the manager sensor, resources.

    ``config`` only supplies sensor intervals and Spark settings (defaults when None); ``config_path``
    is what the replication resource reads at run time (empty: ``$LAKEFS_MIRROR_CONFIG``).
    ``track_mirrors=False`` stops the manager sensor from comparing the active set with ``mirrors``.
    """
    from .assets import build_branch_heads_asset, build_tags_asset
    from .jobs import refs_migration_job

    names = sorted(set(mirrors))
    commit_interval = config.commit_sensor.process_branches_duration if config else None
    manager_interval = config.mirrors_manager.process_mirrors_interval_duration if config else None
    branch_assets = [build_branch_heads_asset(name) for name in names]
    tag_assets = [build_tags_asset(name) for name in names]
    sensors = [
        build_commit_sensor(name, branches, tags_target=tags, interval_seconds=_seconds(commit_interval, 60))
        for name, branches, tags in zip(names, branch_assets, tag_assets, strict=True)
    ]
    sensors.append(
        build_mirrors_manager_sensor(
            frozenset(names) if track_mirrors else None,
            interval_seconds=_seconds(manager_interval, 20),
            location_name=location_name,
            reload=reload,
        )
    )
    validator = config.validator if config else ValidatorConfig()
    return dg.Definitions(
        assets=[*branch_assets, *tag_assets],
        jobs=[refs_migration_job],
        sensors=sensors,
        resources={
            "replication": ReplicationResource(config_path=config_path),
            "spark_validator": SparkValidatorResource.from_config(
                config.spark if config else SparkConfig(), validator.num_workers, spark_conf
            ),
        },
        # One step per run; in-process keeps one SparkSession per run worker.
        executor=dg.in_process_executor,
    )


def _seconds(value: object, default: int) -> int:
    total = getattr(value, "total_seconds", None)
    return max(1, round(total())) if callable(total) else default


def _load_config(path: str) -> ReplicationConfig | None:
    from .config import load_config

    try:
        return load_config(path or None)
    except Exception as exc:
        log.warning("lakefs-mirror: replication config %s not usable (%s); no mirror assets loaded", path, exc)
        return None


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
