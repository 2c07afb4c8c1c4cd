"""Under Dagster too, one rotten object fails only the run of the branch (and the tag) that holds it: the
failure names the object's address, and every other branch and tag converges through its own run."""

from __future__ import annotations

from urllib.parse import urlsplit

import dagster as dg
import pytest
from lakefs_mirror_devenv.demo.converge import run_until_converged

from lakefs_mirror_dagster.orchestration.mirroring import MANAGER_SENSOR_NAME
from tests.replication.conftest import rot_at_source

from .conftest import MirrorCase
from .test_tags import _tick

pytestmark = pytest.mark.integration


def test_a_rotten_object_fails_only_its_own_runs(mirror_case: MirrorCase, lakefs_env, instance) -> None:
    case = mirror_case
    case.src.create_tag(case.repo, "v1", "main")
    case.src.create_branch(case.repo, "bad", "main")
    bad_head = case.commit("bad", {"tables/rot/part-0.parquet": 3000}, "an object that will rot")
    case.src.create_tag(case.repo, "v-bad", bad_head)
    case.src.create_branch(case.repo, "feature", "main")
    case.commit("feature", {"tables/f/part-0.parquet": 50}, "fine work")

    physical = urlsplit(case.src.stat_object(case.repo, "bad", "tables/rot/part-0.parquet").physical_address)
    restore = rot_at_source(lakefs_env, case.src, case.repo, "bad", "tables/rot/part-0.parquet")
    try:
        _converge_around_the_rotten_object(case, instance, physical.path)
    finally:  # the mirror stays in the suite's shared database: leave its source whole for later passes
        restore()


def _converge_around_the_rotten_object(case: MirrorCase, instance: dg.DagsterInstance, physical_path: str) -> None:
    name = case.mirror.name
    feature_head = case.src.get_branch_head(case.repo, "feature")
    defs = case.definitions()
    _tick(defs, MANAGER_SENSOR_NAME, instance)
    converged = run_until_converged(instance, defs, max_rounds=3, timeout_seconds=300)
    assert {r.branch for r in converged.failed} == {"bad", ""}, converged.failed  # "": the tags run
    assert {r.branch for r in converged.runs if r.success} >= {"main", "feature"}, converged.runs

    heads = {b.id: b.commit_id for b in case.dst.list_branches(name)}
    assert heads.get("feature") == feature_head and heads.get("main") == case.src.get_branch_head(case.repo, "main")
    assert "bad" not in heads, "promoted onto a rotten object"
    assert {t.id for t in case.dst.list_tags(name)} == {"v1"}, "the tag on the rotten commit was created"

    failures = _step_failures(instance)
    address = physical_path.rsplit("/data/", 1)[1]
    assert any(f"data/{address}" in f and "MD5" in f for f in failures), failures


def _step_failures(instance: dg.DagsterInstance) -> list[str]:
    messages = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE])):
        for event in instance.all_logs(record.dagster_run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
            error = event.dagster_event.step_failure_data.error  # type: ignore[union-attr]
            messages.append(str(error.message if error else ""))
    return messages
