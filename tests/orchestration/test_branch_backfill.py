"""A backfill of many branch partitions is one run (``BackfillPolicy.single_run``) that syncs them on the engine's
branch workers; each branch gets its own ``ranges_validated`` evaluation (so the UI shows which one is blocked),
a branch already in sync is not materialized, and a blocked one fails the run after the others were recorded."""

from __future__ import annotations

import dagster as dg

from lakefs_mirror_dagster.orchestration.history import mirror_history
from lakefs_mirror_dagster.orchestration.mirroring import branch_partitions_name, mirror_asset_key
from lakefs_mirror_dagster.orchestration.mirroring.checks import RANGES_VALIDATED
from lakefs_mirror_dagster.orchestration.mirroring.spark import SparkValidatorResource
from lakefs_mirror_dagster.orchestration.options import DEFAULT_OPTIONS
from lakefs_mirror_dagster.region.status import status_report
from lakefs_mirror_dagster.storage import join_namespace
from tests.replication.conftest import assert_mirror_equals_source

from .conftest import MirrorCase

RANGE_TAGS = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end")


def _check_evaluations(instance: dg.DagsterInstance, name: str) -> dict[str, bool]:
    """The latest ``ranges_validated`` outcome of each branch partition, as the UI shows them."""
    key = dg.AssetCheckKey(mirror_asset_key(name), RANGES_VALIDATED)
    records = instance.event_log_storage.get_asset_check_execution_history(key, limit=50)
    outcome: dict[str, bool] = {}
    for record in reversed(records):  # oldest first: the newest wins
        evaluation = record.event.asset_check_evaluation if record.event else None
        if evaluation is not None and evaluation.partition is not None:
            outcome[evaluation.partition] = evaluation.passed
    return outcome


def test_one_run_syncs_many_branches_with_a_check_per_branch(mirror_case: MirrorCase, instance) -> None:
    case, name = mirror_case, mirror_case.mirror.name
    case.service.activate(case.mirror)
    for branch in ("bad", "good", "same"):
        case.src.create_branch(case.repo, branch, "main")
    case.commit("good", {"tables/good.json": 10}, "good work")
    case.commit("bad", {"tables/bad.json": 11}, "bad work")
    defs = case.definitions()
    instance.add_dynamic_partitions(branch_partitions_name(name), ["bad", "good", "main", "same"])
    job = defs.resolve_implicit_global_asset_job_def()

    # "same" is mirrored first, alone; the backfill then finds it already in sync.
    alone = job.execute_in_process(instance=instance, partition_key="same", asset_selection=[mirror_asset_key(name)])
    assert alone.success
    assert [p.action for p in mirror_history(instance, name, "same")] == ["created"]

    # The destination copy of bad's own object vanishes before each validation: only "bad" is blocked.
    physical = case.src.stat_object(case.repo, "bad", "tables/bad.json").physical_address
    victim = join_namespace(case.mirror.storage_namespace, "data/" + physical.split("/data/", 1)[1])
    base: SparkValidatorResource = defs.resources[DEFAULT_OPTIONS.spark_resource_key]  # type: ignore[index,assignment]

    class LosingBadsObject(SparkValidatorResource):
        def engine_for(self, service, mirror, **kwargs):  # type: ignore[no-untyped-def]
            engine, spark = super().engine_for(service, mirror, **kwargs)
            inner, store = engine.history.validator, service.destination_store(mirror.storage_id)

            def validate(range_ids):  # type: ignore[no-untyped-def]
                if store.stat(victim) is not None:
                    store.delete(victim)
                return inner(range_ids)

            engine.history.validator = validate
            return engine, spark

    resources = {**dict(defs.resources or {}), DEFAULT_OPTIONS.spark_resource_key: LosingBadsObject(**base.__dict__)}
    losing = dg.Definitions.merge(case.definitions(bind_resources=False), dg.Definitions(resources=resources))
    backfill = losing.resolve_implicit_global_asset_job_def()
    result = backfill.execute_in_process(
        instance=instance,
        tags=dict(zip(RANGE_TAGS, ("bad", "same"), strict=True)),
        asset_selection=[mirror_asset_key(name)],
        raise_on_error=False,
    )

    assert not result.success  # "bad" was blocked: the run says so...
    assert len(instance.get_runs()) == 2  # ...and the four branches were one run
    assert _check_evaluations(instance, name) == {"bad": False, "good": True, "main": True, "same": True}
    moves = {b: [p.action for p in mirror_history(instance, name, b)] for b in ("bad", "good", "main", "same")}
    assert moves == {"bad": [], "good": ["created"], "main": ["created"], "same": ["created"]}
    assert {b.id for b in case.dst.list_branches(name)} == {"good", "main", "same"}
    [status] = status_report(case.service, mirror=name)
    assert {b.branch for b in status.branches if not b.in_sync} == {"bad"}

    # The next run of the blocked branch alone, with intact storage, promotes it.
    again = job.execute_in_process(instance=instance, partition_key="bad", asset_selection=[mirror_asset_key(name)])
    assert again.success
    assert _check_evaluations(instance, name)["bad"] is True
    assert_mirror_equals_source(case.src, case.repo, case.dst, name)
