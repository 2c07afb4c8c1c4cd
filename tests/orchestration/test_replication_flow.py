"""Sensors request runs, runs mirror branches through Spark validation, and the event log keeps the history.

Everything is real: lakeFS regions, MinIO, the mirrors database, a Dagster instance and Spark in local
mode. Sensors are ticked with ``build_sensor_context`` and their partition requests applied as the daemon
applies them; runs execute in-process with the code location's own resources.
"""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.demo.converge import run_until_converged
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.mirrors import MirrorState
from lakefs_mirror_dagster.orchestration.history import mirror_history, recent_moves
from lakefs_mirror_dagster.orchestration.mirroring import (
    MANAGER_SENSOR_NAME,
    branch_partitions_name,
    build_branch_heads_asset,
    commit_sensor_name,
    mirror_asset_key,
)
from lakefs_mirror_dagster.orchestration.mirroring.checks import RANGES_VALIDATED
from lakefs_mirror_dagster.region.status import status_report
from lakefs_mirror_dagster.service import create_app, running_server
from tests.replication.conftest import assert_mirror_equals_source
from tests.service.conftest import curl

from .conftest import MirrorCase


def _tick(defs: dg.Definitions, name: str, instance: dg.DagsterInstance, cursor: str | None = None) -> dg.SensorResult:
    sensor = defs.resolve_sensor_def(name)
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources) as context:
        result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    for req in result.dynamic_partitions_requests or []:
        if isinstance(req, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        else:
            for key in req.partition_keys:
                instance.delete_dynamic_partition(req.partitions_def_name, key)
    return result


def _run(defs: dg.Definitions, mirror: str, branch: str, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [build_branch_heads_asset(mirror)],
        instance=instance,
        partition_key=branch,
        resources=dict(defs.resources or {}),
        raise_on_error=False,
    )


def test_sensor_ticks_request_runs_that_mirror_every_branch(
    mirror_case: MirrorCase, instance, lakefs_env: Environment
) -> None:
    case, name = mirror_case, mirror_case.mirror.name
    case.src.create_branch(case.repo, "feature", "main")
    feature_head = case.commit("feature", {"tables/u/u-0.json": 40}, "feature work")
    main_head = case.src.get_branch_head(case.repo, "main")
    defs = case.definitions()

    manager = _tick(defs, MANAGER_SENSOR_NAME, instance)
    assert f"activated {name}" in manager.skip_reason.skip_message  # type: ignore[union-attr]
    assert case.service.mirrors.get_mirror(case.mirror.id).state == MirrorState.ACTIVE
    assert case.dst.get_repository(name).read_only

    tick = _tick(defs, commit_sensor_name(name), instance)
    requested = {(r.partition_key, r.run_key) for r in tick.run_requests}
    assert requested == {
        ("main", f"{name}/main/{main_head}@none"),
        ("feature", f"{name}/feature/{feature_head}@none"),
    }
    assert set(instance.get_dynamic_partitions(branch_partitions_name(name))) == {"main", "feature"}
    # The source repository, upstream of the mirror, links to each moved branch's commit in lakeFS's UI.
    observed = instance.fetch_observations(dg.AssetKey(["lakefs_mirror", name, "source"]), limit=1).records
    [observation] = [r.asset_observation for r in observed]
    assert observation is not None
    link = observation.metadata["branch main"].value
    assert link == f"{lakefs_env.region('region-a').endpoint.rstrip('/')}/repositories/{case.repo}/commits/{main_head}"

    validated, paths = [], set()
    for request in tick.run_requests:
        result = _run(defs, name, request.partition_key, instance)
        assert result.success
        [check] = result.get_asset_check_evaluations()
        assert check.passed
        validated.append(check.metadata["ranges_validated"].value)
        paths.add(check.metadata["validated_on"].value)
    # Spark validated the new ranges before the branches moved (ranges shared by both are validated once).
    assert sum(validated) >= 2, validated
    assert "spark" in paths and paths <= {"spark", "none"}, paths  # "none": every range already validated
    assert_mirror_equals_source(case.src, case.repo, case.dst, name)

    # In sync: the next tick requests nothing.
    again = _tick(defs, commit_sensor_name(name), instance, tick.cursor)
    assert again.run_requests == []

    # A new commit on main and a deleted source branch: one update, one deletion at the mirror.
    before_second = dt.datetime.now(dt.UTC)
    new_main = case.commit("main", {"tables/t/part-9.parquet": 90}, "second")
    case.src.delete_branch(case.repo, "feature")
    tick = _tick(defs, commit_sensor_name(name), instance, again.cursor)
    assert {r.partition_key for r in tick.run_requests} == {"main", "feature"}
    for request in tick.run_requests:
        assert _run(defs, name, request.partition_key, instance).success
    assert_mirror_equals_source(case.src, case.repo, case.dst, name)
    # The deleted branch's partition goes at the following tick, once the mirror no longer has it.
    tick = _tick(defs, commit_sensor_name(name), instance, tick.cursor)
    assert tick.run_requests == []
    assert instance.get_dynamic_partitions(branch_partitions_name(name)) == ["main"]

    # The event log is the history of the mirror branches, newest first.
    history = mirror_history(instance, name, "main")
    assert [(p.action, p.mirror_commit_id) for p in history] == [("advanced", new_main), ("created", main_head)]
    assert history[0].previous_mirror_commit_id == main_head
    assert history[0].lag_seconds is not None and history[0].lag_seconds >= 0
    assert history[0].commit_time is not None
    assert history[0].metadata["source_commit"].endswith(f"/repositories/{case.repo}/commits/{new_main}")
    # What the REST API and `status` serve (the mirrors database) moved with the Dagster promotion too.
    record = case.service.mirrors.get_branch(case.mirror.id, "main")
    assert record is not None and record.mirrored_commit_id == new_main
    assert record.promoted_at is not None and record.promoted_at >= before_second, "stale promotion time"
    assert record.lag_seconds == pytest.approx(history[0].lag_seconds, abs=1.0)
    # ... and so does the REST API, read with curl as an operator would.
    keys = lakefs_env.region("region-a")  # the source region serves its repositories' mirrors
    with running_server(create_app(case.src_service), "127.0.0.1", free_port()) as url:
        answer = curl(
            f"{url}/service/replication/v1/repositories/{case.repo}/mirrors/{case.mirror.id}",
            "-u",
            f"{keys.access_key_id}:{keys.secret_access_key}",
        )
    assert answer.status == 200, answer.body
    [served] = [b for b in answer.body["branches"] if b["branch"] == "main"]
    assert served["mirrored_commit_id"] == new_main
    assert dt.datetime.fromisoformat(served["promoted_at"]) >= before_second, "stale promotion time in the API"
    assert served["lag_seconds"] == pytest.approx(history[0].lag_seconds, abs=1.0)
    assert [p.action for p in mirror_history(instance, name, "feature")] == ["deleted", "created"]
    assert [p.branch for p in mirror_history(instance, name, limit=1)] in (["main"], ["feature"])

    [status] = status_report(case.service, mirror=name, moves=recent_moves(instance))
    assert status.state == "active"
    assert [(b.branch, b.mirror_commit_id, b.in_sync) for b in status.branches] == [("main", new_main, True)]
    assert [p.mirror_commit_id for p in status.branches[0].recent] == [new_main, main_head]


def test_missing_destination_object_fails_validation_and_blocks_promotion(mirror_case: MirrorCase, instance) -> None:
    from lakefs_mirror_dagster.orchestration.mirroring import SparkValidatorResource
    from lakefs_mirror_dagster.storage import join_namespace

    case, name = mirror_case, mirror_case.mirror.name
    case.service.activate(case.mirror)
    mirror = case.service.mirrors.get_mirror(case.mirror.id)
    defs = case.definitions()
    base: SparkValidatorResource = defs.resources["lakefs_mirror_spark"]  # type: ignore[index,assignment]
    deleted: list[str] = []

    class LosingOneObject(SparkValidatorResource):
        """Transfer happened; one object vanishes from the destination before Spark validates."""

        def engine_for(self, service, mirror, **kwargs):  # type: ignore[no-untyped-def]
            engine, spark = super().engine_for(service, mirror, **kwargs)
            inner = engine.history.validator
            store = service.destination_store(mirror.storage_id)

            def validate(range_ids):  # type: ignore[no-untyped-def]
                victim = next(iter(store.list_prefix(join_namespace(mirror.storage_namespace, "data/"))))
                store.delete(victim.uri)
                deleted.append(victim.uri)
                return inner(range_ids)

            engine.history.validator = validate
            return engine, spark

    instance.add_dynamic_partitions(branch_partitions_name(name), ["main"])
    resources = {**dict(defs.resources or {}), "lakefs_mirror_spark": LosingOneObject(**base.__dict__)}
    blocked = dg.materialize(
        [build_branch_heads_asset(name)],
        instance=instance,
        partition_key="main",
        resources=resources,
        raise_on_error=False,
    )
    assert not blocked.success and deleted
    # Not promoted: the mirror has no main branch, and no materialization claims one.
    assert [b.id for b in case.dst.list_branches(name)] == []
    assert mirror_history(instance, name, "main") == []
    check = instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(mirror_asset_key(name), RANGES_VALIDATED)
    )
    assert check is not None and check.event is not None
    evaluation = check.event.asset_check_evaluation
    assert evaluation is not None and not evaluation.passed
    missing = evaluation.metadata["first_missing"].value
    relative = deleted[0].split("/data/", 1)[1]
    assert any(relative in entry for entry in missing), missing
    branch_state = case.service.mirrors.get_branch(mirror.id, "main")
    assert branch_state is not None and branch_state.mirrored_commit_id is None

    # Running again with intact storage repairs it: the object is copied again, then promoted.
    repaired = run_until_converged(instance, defs, max_rounds=3, timeout_seconds=300)
    assert repaired.converged and not repaired.failed and len(repaired.runs) == 1
    assert_mirror_equals_source(case.src, case.repo, case.dst, name)
    assert [p.action for p in mirror_history(instance, name, "main")] == ["created"]


def test_manager_deletes_a_deleted_mirror_repository_record_and_partitions(mirror_case: MirrorCase, instance) -> None:
    from lakefs_mirror_dagster.mirrors import MirrorNotFound

    case, name = mirror_case, mirror_case.mirror.name
    defs = case.definitions()
    _tick(defs, MANAGER_SENSOR_NAME, instance)
    _tick(defs, commit_sensor_name(name), instance)
    assert instance.get_dynamic_partitions(branch_partitions_name(name)) == ["main"]
    case.service.mirrors.set_state(case.mirror.id, MirrorState.DELETING, "deleted by a user", None)

    result = _tick(defs, MANAGER_SENSOR_NAME, instance)
    assert f"deleted {name}" in result.skip_reason.skip_message  # type: ignore[union-attr]
    # (Listed, not fetched: lakeFS serves a just-deleted repository from its cache for a few seconds.)
    assert name not in {r.id for r in case.dst.list_repositories()}
    with pytest.raises(MirrorNotFound):
        case.service.mirrors.get_mirror(case.mirror.id)
    assert instance.get_dynamic_partitions(branch_partitions_name(name)) == []
