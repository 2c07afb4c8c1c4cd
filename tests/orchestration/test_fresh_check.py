"""The ``fresh`` asset check under Dagster: the commit sensor reports it (runless) when its outcome changes and on
every tick while it fails, naming the branch and its lag as numeric metadata; ``freshness.max_behind`` sets it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Any

import dagster as dg
import pytest
from lakefs_mirror_devenv.demo.converge import run_until_converged

from lakefs_mirror_dagster.config import FreshnessConfig, load_config
from lakefs_mirror_dagster.orchestration.mirroring import MANAGER_SENSOR_NAME, commit_sensor_name
from lakefs_mirror_dagster.orchestration.mirroring.branch_heads import mirror_asset_key
from lakefs_mirror_dagster.orchestration.mirroring.freshness import FRESH

from ..replication.conftest import rot_at_source
from .conftest import isolated_case
from .test_tags import _tick

pytestmark = pytest.mark.integration


def _evaluations(instance: dg.DagsterInstance, mirror: str) -> list[Any]:
    """The check's evaluations, newest first."""
    key = dg.AssetCheckKey(mirror_asset_key(mirror), FRESH)
    return [r.evaluation for r in instance.event_log_storage.get_asset_check_execution_history(key, limit=20)]


def test_the_fresh_check_fails_naming_a_branch_left_behind_and_passes_again_once_it_catches_up(
    lakefs_env, isolated_regions, unique_name, instance: dg.DagsterInstance
) -> None:
    config_path = isolated_regions[0]
    path = config_path("region-b")
    config = load_config(path, env={})
    config = dataclasses.replace(config, freshness=FreshnessConfig(max_behind=dt.timedelta(seconds=1)))
    case = isolated_case(lakefs_env, isolated_regions, unique_name, "fresh", path, config)
    repo, mirror, src, dst_svc = case.repo, case.mirror, case.src, case.service
    case.commit("main", {"tables/t/part-0.parquet": 100}, "first")
    defs = case.definitions()
    sensor = commit_sensor_name(mirror.name)
    _tick(defs, MANAGER_SENSOR_NAME, instance)
    first = run_until_converged(instance, defs, max_rounds=3, timeout_seconds=120)
    assert first.converged
    [run] = first.runs  # and the run logged its progress (at least once: when its branch was done)
    logged = [e.user_message for e in instance.all_logs(run.run_id) if "progress: " in e.user_message]
    assert any(f"mirror {mirror.name}: ranges 1/1, objects 1/1" in m for m in logged), logged

    def tick(cursor: str | None) -> str | None:
        with dg.build_sensor_context(instance=instance, resources=defs.resources, cursor=cursor) as context:
            result = defs.resolve_sensor_def(sensor)(context)
        assert isinstance(result, dg.SensorResult)
        return result.cursor

    before = len(_evaluations(instance, mirror.name))  # the converging rounds ticked the sensor too
    cursor = tick(None)
    passed, *_ = _evaluations(instance, mirror.name)
    assert passed.passed and passed.metadata["branches_behind"].value == 0
    assert len(_evaluations(instance, mirror.name)) == before + 1
    cursor = tick(cursor)
    assert len(_evaluations(instance, mirror.name)) == before + 1, "an unchanged passing outcome is reported once"

    # A source commit whose object rots at rest: the branch's run is blocked, the mirror stays behind.
    behind = case.commit("main", {"tables/t/part-1.parquet": 3000}, "second")
    repair = rot_at_source(lakefs_env, src, repo, "main", "tables/t/part-1.parquet")
    cursor = tick(cursor)  # records when the mirror fell behind (the source head's time)
    blocked = run_until_converged(instance, defs, max_rounds=2, timeout_seconds=120)
    assert {r.branch for r in blocked.failed} == {"main"}, blocked.runs  # and its retries (cooldowns are 0s here)
    time.sleep(1.5)
    cursor = tick(cursor)
    cursor = tick(cursor)
    failing = _evaluations(instance, mirror.name)[:2]
    assert [e.passed for e in failing] == [False, False], "reported on every tick while it fails"
    newest = failing[0]
    assert f"{mirror.name} branch main" in newest.description and behind in newest.description
    assert newest.metadata["max_behind_seconds"].value > 1 and newest.metadata["branches_behind"].value == 1
    assert newest.metadata["max_behind_seconds"].value >= failing[1].metadata["max_behind_seconds"].value

    repair()
    block = dst_svc.mirrors.get_branch(mirror.id, "main")
    assert block is not None and block.retry_after is not None
    time.sleep(max(0.0, (block.retry_after - dt.datetime.now(dt.UTC)).total_seconds() + 0.1))
    tick(cursor)  # requests the retry run after the cooldown
    assert run_until_converged(instance, defs, max_rounds=3, timeout_seconds=120).converged
    tick(cursor)
    assert _evaluations(instance, mirror.name)[0].passed
