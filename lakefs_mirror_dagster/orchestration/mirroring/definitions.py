"""The mirroring domain's definitions: per mirror a branch-heads asset with its ``fresh`` check, a tags asset and
a commit sensor (with ``hooks.sensor_listeners`` > 1, hooks sensors beside it); the mirrors-manager sensor; the
Spark resource their runs use."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import dagster as dg

from ...config import FreshnessConfig, ReplicationConfig, SparkConfig, ValidatorConfig
from .branch_heads import build_branch_heads_asset
from .commits import build_commit_sensor, build_hooks_sensor
from .freshness import build_fresh_check
from .manager import build_mirrors_manager_sensor
from .spark import SparkValidatorResource
from .tags import build_tags_asset

__all__ = ["mirroring_definitions"]


def mirroring_definitions(
    mirrors: Iterable[str],
    *,
    config: ReplicationConfig | None,
    location_name: str,
    reload: Callable[[str], str] | None,
    track_mirrors: bool = True,
    spark_conf: dict[str, str] | None = None,
) -> dg.Definitions:
    """``config`` only supplies sensor intervals and Spark settings (defaults when None);
    ``track_mirrors=False`` stops the manager sensor from comparing the active set with ``mirrors``."""
    names = sorted(set(mirrors))
    commit_interval = config.commit_sensor.process_branches_duration if config else None
    manager_interval = config.mirrors_manager.process_mirrors_interval_duration if config else None
    branch_assets = [build_branch_heads_asset(name) for name in names]
    tag_assets = [build_tags_asset(name) for name in names]
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
        )
        for name, branches, tags in zip(names, branch_assets, tag_assets, strict=True)
    ]
    sensors += [
        build_hooks_sensor(
            name,
            branches,
            listener=listener,
            tags_target=tags,
            hooks_interval_seconds=hooks_interval or 1,
            hooks_wait_seconds=hooks_wait,
        )
        for name, branches, tags in zip(names, branch_assets, tag_assets, strict=True)
        for listener in range(2, listeners + 1)
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
        asset_checks=[build_fresh_check(name, max_behind) for name in names],
        sensors=sensors,
        resources={
            "spark_validator": SparkValidatorResource.from_config(
                config.spark if config else SparkConfig(), validator.num_workers, spark_conf
            ),
        },
    )


def _seconds(value: object, default: int) -> int:
    total = getattr(value, "total_seconds", None)
    return max(1, round(total())) if callable(total) else default
