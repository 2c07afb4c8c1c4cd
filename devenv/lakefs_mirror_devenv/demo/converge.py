"""Drive the sensors and the runs they request in this process until nothing is left to do.

For demos and tests: the same sensor code and asset code the daemon would run, but ticks are taken one
after the other and runs execute in-process, bounded in rounds and time. Dynamic partition requests are
applied to the instance the way the daemon applies them (before the runs of the same tick).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.orchestration.mirroring import build_branch_heads_asset, build_tags_asset, tags_asset_key
from lakefs_mirror_dagster.orchestration.mirroring.commits import commit_sensor_name
from lakefs_mirror_dagster.orchestration.resources import resolve_config_path

__all__ = ["ConvergeResult", "RunOutcome", "run_until_converged"]


@dataclass(frozen=True)
class RunOutcome:
    mirror: str
    branch: str  # "" for a run of the mirror's tags asset
    run_key: str
    run_id: str
    success: bool


@dataclass
class ConvergeResult:
    """Every run executed, and whether a final round found nothing more to do."""

    rounds: int = 0
    runs: list[RunOutcome] = field(default_factory=list)
    converged: bool = False

    @property
    def failed(self) -> list[RunOutcome]:
        return [r for r in self.runs if not r.success]


def run_until_converged(
    instance: dg.DagsterInstance,
    defs: dg.Definitions | Callable[[], dg.Definitions] | None = None,
    *,
    config_path: str = "",
    max_rounds: int = 10,
    timeout_seconds: float = 600.0,
    log_level: str = "DEBUG",
) -> ConvergeResult:
    """Tick every sensor, run what they request, repeat until a round requests nothing.

    ``defs``: fixed definitions, a factory called every round, or None to build them every round from
    the mirrors database of the config at ``config_path`` (so mirrors activated by the manager sensor
    join in the next round, as a code-location reload would do under the daemon). A requested run key is
    executed once, like the daemon's run-key de-duplication. ``log_level`` is the runs' console log level.
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
    deadline = time.monotonic() + timeout_seconds
    cursors: dict[str, str | None] = {}
    seen_keys: set[str] = set()
    result = ConvergeResult()
    previous_assets: set[dg.AssetKey] | None = None
    for _ in range(max_rounds):
        if time.monotonic() > deadline:
            break
        current = _resolve(defs, config_path)
        assets = set(current.resolve_all_asset_keys())
        # Rebuilt definitions must also come out the same twice: the manager may have activated mirrors.
        stable = isinstance(defs, dg.Definitions) or assets == previous_assets
        previous_assets = assets
        result.rounds += 1
        requested = 0
        for sensor in sorted(current.sensors or [], key=lambda s: s.name != "lakefs_mirror_manager"):
            assert isinstance(sensor, dg.SensorDefinition)
            with dg.build_sensor_context(
                instance=instance, cursor=cursors.get(sensor.name), resources=current.resources
            ) as context:
                outcome = sensor(context)
            if not isinstance(outcome, dg.SensorResult):
                continue
            cursors[sensor.name] = outcome.cursor if outcome.cursor is not None else context.cursor
            _apply_partition_requests(instance, outcome)
            mirror = _mirror_of(sensor.name, current)
            for request in outcome.run_requests or []:
                if not isinstance(request, dg.RunRequest) or mirror is None or request.run_key in seen_keys:
                    continue
                if time.monotonic() > deadline:
                    return result
                if request.run_key:
                    seen_keys.add(request.run_key)
                requested += 1
                result.runs.append(_execute(instance, current, mirror, request, log_level))
        if stable and requested == 0 and all(not _resuming(c) for c in cursors.values()):
            result.converged = True
            break
    return result


def _resolve(defs: dg.Definitions | Callable[[], dg.Definitions] | None, config_path: str) -> dg.Definitions:
    if isinstance(defs, dg.Definitions):
        return defs
    if defs is not None:
        return defs()
    from lakefs_mirror_dagster.orchestration.definitions import build_definitions, discover_mirrors

    path = resolve_config_path(config_path)
    config = load_config(path or None)
    return build_definitions(discover_mirrors(config), config=config, config_path=path, reload=None)


def _apply_partition_requests(instance: dg.DagsterInstance, outcome: dg.SensorResult) -> None:
    for req in outcome.dynamic_partitions_requests or []:
        if isinstance(req, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        elif isinstance(req, dg.DeleteDynamicPartitionsRequest):
            for key in req.partition_keys:
                instance.delete_dynamic_partition(req.partitions_def_name, key)


def _mirror_of(sensor_name: str, defs: dg.Definitions) -> str | None:
    for key in defs.resolve_all_asset_keys():
        if len(key.path) == 3 and commit_sensor_name(key.path[1]) == sensor_name:
            return key.path[1]
    return None


def _execute(
    instance: dg.DagsterInstance, defs: dg.Definitions, mirror: str, request: dg.RunRequest, log_level: str
) -> RunOutcome:
    # The definitions' copy has their resources bound; a fresh one takes them from the call.
    is_tags = request.asset_selection == [tags_asset_key(mirror)]
    asset = build_tags_asset(mirror) if is_tags else build_branch_heads_asset(mirror)
    branch = "" if is_tags else request.partition_key or ""
    run = dg.materialize(
        [asset],
        instance=instance,
        partition_key=branch or None,
        resources=dict(defs.resources or {}),
        tags={**request.tags, **({"dagster/run_key": request.run_key} if request.run_key else {})},
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
        raise_on_error=False,
    )
    return RunOutcome(mirror, branch, request.run_key or "", run.run_id, run.success)


def _resuming(cursor: str | None) -> bool:
    """Whether a commit sensor stopped mid-listing and resumes at its next tick."""
    try:
        state = json.loads(cursor) if cursor else {}
    except ValueError:
        return False
    return isinstance(state, dict) and bool(state.get("after"))
