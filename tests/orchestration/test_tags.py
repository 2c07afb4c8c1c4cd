"""Tags through Dagster: the commit sensor requests a run of the mirror's ``tags`` asset when the tag sets
differ; the run creates, moves and deletes tags after Spark validated their commits; a tag whose commit fails
validation is not created while the others are."""

from __future__ import annotations

from typing import Any

import dagster as dg
from lakefs_mirror_devenv.demo.converge import run_until_converged

from lakefs_mirror_dagster.orchestration.mirroring import (
    MANAGER_SENSOR_NAME,
    SparkValidatorResource,
    build_tags_asset,
    commit_sensor_name,
    tags_asset_key,
    tags_digest,
)
from lakefs_mirror_dagster.orchestration.mirroring.checks import RANGES_VALIDATED
from lakefs_mirror_dagster.storage import join_namespace

from .conftest import MirrorCase


def _tags(client: Any, repo: str) -> dict[str, str]:
    return {r.id: r.commit_id for r in client.list_tags(repo)}


def _latest_tags_metadata(instance: dg.DagsterInstance, mirror: str) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(tags_asset_key(mirror))
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _tick(defs: dg.Definitions, name: str, instance: dg.DagsterInstance) -> dg.SensorResult:
    sensor = defs.resolve_sensor_def(name)
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        result = sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def test_sensor_requests_a_tags_run_that_creates_moves_and_deletes_tags(mirror_case: MirrorCase, instance) -> None:
    case, name = mirror_case, mirror_case.mirror.name
    first = case.src.get_branch_head(case.repo, "main")
    case.src.create_tag(case.repo, "v1", first)
    case.src.create_branch(case.repo, "scratch", "main")
    scratch = case.commit("scratch", {"tables/s/only-on-scratch.json": 33}, "scratch work")
    case.src.create_tag(case.repo, "v2", scratch)
    defs = case.definitions()
    _tick(defs, MANAGER_SENSOR_NAME, instance)

    tick = _tick(defs, commit_sensor_name(name), instance)
    [tags_request] = [r for r in tick.run_requests if r.asset_selection == [tags_asset_key(name)]]
    assert tags_request.run_key == f"{name}/tags/{tags_digest(_tags(case.src, case.repo))}@{tags_digest({})}"
    assert tags_request.partition_key is None

    converged = run_until_converged(instance, defs, max_rounds=4, timeout_seconds=300)
    assert converged.converged and not converged.failed
    assert _tags(case.dst, name) == {"v1": first, "v2": scratch}
    created = _latest_tags_metadata(instance, name)
    assert (created["tags_created"], created["tags_moved"], created["tags_deleted"]) == (2, 0, 0)

    # Move v1, delete v2, and tag a commit that no branch reaches any more (its branch is deleted).
    second = case.commit("main", {"tables/t/part-7.parquet": 70}, "second")
    case.src.delete_tag(case.repo, "v1")
    case.src.create_tag(case.repo, "v1", second)
    case.src.delete_tag(case.repo, "v2")
    case.src.create_branch(case.repo, "gone", "main")
    orphan = case.commit("gone", {"tables/g/orphan.json": 21}, "soon unreachable by branches")
    case.src.create_tag(case.repo, "v3", orphan)
    case.src.delete_branch(case.repo, "gone")
    case.src.delete_branch(case.repo, "scratch")

    again = run_until_converged(instance, defs, max_rounds=4, timeout_seconds=300)
    assert again.converged and not again.failed
    assert _tags(case.dst, name) == _tags(case.src, case.repo) == {"v1": second, "v3": orphan}
    changed = _latest_tags_metadata(instance, name)
    assert (changed["tags_created"], changed["tags_moved"], changed["tags_deleted"]) == (1, 1, 1)
    assert changed["changed"] == {"created": ["v3"], "moved": ["v1"], "deleted": ["v2"], "blocked": []}
    # The orphan commit's object is readable at the mirror through the tag.
    assert case.dst.stat_object(name, "v3", "tables/g/orphan.json").size_bytes == 21


def test_a_tag_whose_commit_fails_validation_is_not_created(mirror_case: MirrorCase, instance) -> None:
    case, name = mirror_case, mirror_case.mirror.name
    first = case.src.get_branch_head(case.repo, "main")
    case.src.create_tag(case.repo, "a-good", first)
    case.src.create_branch(case.repo, "side", "main")
    side = case.commit("side", {"tables/b/only-b.json": 44}, "side commit")
    case.src.create_tag(case.repo, "b-bad", side)
    case.service.activate(case.mirror)
    defs = case.definitions()
    base: SparkValidatorResource = defs.resources["lakefs_mirror_spark"]  # type: ignore[index,assignment]
    deleted: list[str] = []

    class LosingTheSecondCommitsObject(SparkValidatorResource):
        """The second validation (tag b-bad's commit) finds the object only that commit added gone."""

        def engine_for(self, service, mirror, **kwargs):  # type: ignore[no-untyped-def]
            engine, spark = super().engine_for(service, mirror, **kwargs)
            inner = engine.history.validator
            store = service.destination_store(mirror.storage_id)
            prefix = join_namespace(mirror.storage_namespace, "data/")
            seen: list[set[str]] = []

            def validate(range_ids):  # type: ignore[no-untyped-def]
                present = {o.uri for o in store.list_prefix(prefix)}
                if seen:
                    for uri in sorted(present - seen[0]):
                        store.delete(uri)
                        deleted.append(uri)
                seen.append(present)
                return inner(range_ids)

            engine.history.validator = validate
            return engine, spark

    resources = {**dict(defs.resources or {}), "lakefs_mirror_spark": LosingTheSecondCommitsObject(**base.__dict__)}
    blocked = dg.materialize([build_tags_asset(name)], instance=instance, resources=resources, raise_on_error=False)
    assert not blocked.success and len(deleted) == 1
    # The good tag moved, the bad one did not; the check says which objects were missing.
    assert _tags(case.dst, name) == {"a-good": first}
    record = instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(tags_asset_key(name), RANGES_VALIDATED))
    assert record is not None and record.event is not None
    evaluation = record.event.asset_check_evaluation
    assert evaluation is not None and not evaluation.passed
    relative = deleted[0].split("/data/", 1)[1]
    assert any(relative in entry for entry in evaluation.metadata["first_missing"].value)
    assert _latest_tags_metadata(instance, name)["changed"]["blocked"] == ["b-bad"]

    repaired = run_until_converged(instance, defs, max_rounds=4, timeout_seconds=300)
    assert repaired.converged and not repaired.failed
    assert _tags(case.dst, name) == {"a-good": first, "b-bad": side}
    assert case.dst.stat_object(name, "b-bad", "tables/b/only-b.json").size_bytes == 44
