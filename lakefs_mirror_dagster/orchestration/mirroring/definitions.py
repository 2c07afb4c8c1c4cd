"""The mirroring domain's definitions: per mirror the source repository (an external asset), a branch-heads asset
with its ``fresh`` check, a tags asset, the in-process jobs the commit sensor launches, and the commit sensor
(with ``hooks.sensor_listeners`` > 1, hooks sensors beside it); the mirrors-manager sensor. Resources are the
caller's to bind (``options.resource_key`` and ``options.spark_resource_key``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import dagster as dg

from ...config import FreshnessConfig, ReplicationConfig
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from ..reload import Reload
from .branch_heads import build_branch_heads_asset, build_source_asset
from .commits import build_commit_sensor
from .freshness import build_fresh_check
from .hook_listeners import build_hooks_sensor
from .manager import build_mirrors_manager_sensor
from .tags import build_tags_asset

__all__ = ["mirroring_definitions"]


def mirroring_definitions(
    mirrors: Iterable[str],
    *,
    config: ReplicationConfig | None,
    location_name: str,
    reload: Reload | None,
    track_mirrors: bool = True,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> dg.Definitions:
    """``config`` only supplies sensor intervals (defaults when None); ``track_mirrors=False`` stops the manager
    sensor from comparing the active set with ``mirrors``."""
    names = sorted(set(mirrors))
    commit_interval = config.commit_sensor.process_branches_duration if config else None
    manager_interval = config.mirrors_manager.process_mirrors_interval_duration if config else None
    branch_assets = [build_branch_heads_asset(name, options) for name in names]
    tag_assets = [build_tags_asset(name, options) for name in names]
    branch_jobs = [_in_process_job(options.branches_job_name(n), options.branch_heads_key(n)) for n in names]
    tag_jobs = [_in_process_job(options.tags_job_name(n), options.tags_key(n)) for n in names]
    max_behind = (config.freshness if config else FreshnessConfig()).max_behind.total_seconds()
    hooks = config.hooks if config and config.hooks.enabled else None
    hooks_interval = _seconds(hooks.poll_interval, 1) if hooks else None
    hooks_wait = hooks.sensor_wait.total_seconds() if hooks else 0.0
    listeners = hooks.sensor_listeners if hooks else 1
    sensors = [
        build_commit_sensor(
            name,
            branches,
            tags_target=tags,
            interval_seconds=_seconds(commit_interval, 60),
            max_behind_seconds=max_behind,
            hooks_interval_seconds=hooks_interval,
            hooks_wait_seconds=hooks_wait,
            hooks_listeners=listeners,
            options=options,
        )
        for name, branches, tags in zip(names, branch_jobs, tag_jobs, strict=True)
    ]
    sensors += [
        build_hooks_sensor(
            name,
            branches,
            listener=listener,
            tags_target=tags,
            hooks_interval_seconds=hooks_interval or 1,
            hooks_wait_seconds=hooks_wait,
            options=options,
        )
        for name, branches, tags in zip(names, branch_jobs, tag_jobs, strict=True)
        for listener in range(2, listeners + 1)
    ]
    sensors.append(
        build_mirrors_manager_sensor(
            frozenset(names) if track_mirrors else None,
            interval_seconds=_seconds(manager_interval, 20),
            location_name=location_name,
            reload=reload,
            options=options,
        )
    )
    return dg.Definitions(
        assets=[*(build_source_asset(name, options) for name in names), *branch_assets, *tag_assets],
        asset_checks=[build_fresh_check(name, max_behind, options) for name in names],
        jobs=[*branch_jobs, *tag_jobs],
        sensors=sensors,
    )


def _in_process_job(name: str, key: dg.AssetKey) -> Any:  # (define_asset_job's type is not exported)
    """A job the commit sensor launches: one step per run, in-process, so a run is one process with at most one
    Spark session. Only these jobs get that executor; the user's code location keeps its own."""
    return dg.define_asset_job(name, selection=dg.AssetSelection.assets(key), executor_def=dg.in_process_executor)


def _seconds(value: object, default: int) -> int:
    total = getattr(value, "total_seconds", None)
    return max(1, round(total())) if callable(total) else default
