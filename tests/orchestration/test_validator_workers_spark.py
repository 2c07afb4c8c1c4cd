"""``validator.num_workers`` on Dagster: a run validates a commit's ranges on Spark spread over that many
partitions, which Spark's own status tracker reports as the tasks of the validation stage."""

from __future__ import annotations

import dataclasses
from typing import Any

import dagster as dg
import pytest
from lakefs_mirror_devenv import Environment

from benchmarks._ranges_build import RangeSplit, build_with_ranges
from lakefs_mirror_dagster.orchestration.mirroring import branch_partitions_name, build_branch_heads_asset
from tests.replication.conftest import assert_mirror_equals_source, content

from .conftest import MirrorCase


def _stage_tasks(spark: Any, jobs: set[int]) -> list[int]:
    """The number of tasks of every stage of the Spark jobs not in ``jobs`` (Spark's ``StatusTracker``)."""
    tracker = spark.sparkContext.statusTracker()
    tasks = []
    for job in sorted(set(tracker.getJobIdsForGroup()) - jobs):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            stage_info = tracker.getStageInfo(stage)
            if stage_info is not None:
                tasks.append(stage_info.numTasks)
    return tasks


@pytest.mark.parametrize("workers", [2, 3])
def test_a_run_validates_on_num_workers_spark_partitions(
    mirror_case: MirrorCase, instance: dg.DagsterInstance, lakefs_env: Environment, spark: Any, workers: int
) -> None:
    case, name = mirror_case, mirror_case.mirror.name
    region = lakefs_env.region("region-a")
    made = build_with_ranges(
        case.src,
        case.repo,
        case.src.get_repository(case.repo).storage_namespace,
        blockstore=region.blockstore,
        objects=1_200,
        path_of=lambda i: f"tables/t/part-{i:05d}.bin",
        payload=lambda i: content(f"part-{i}", 100 + i % 57),
        split=RangeSplit(raggedness=200),
    )
    assert len(made.range_ids) > 3  # more ranges than partitions either way
    config = dataclasses.replace(case.config, validator=dataclasses.replace(case.config.validator, num_workers=workers))
    defs = case.definitions(config=config)
    case.service.activate(case.mirror)
    instance.add_dynamic_partitions(branch_partitions_name(name), ["main"])
    before = set(spark.sparkContext.statusTracker().getJobIdsForGroup())

    result = dg.materialize(
        [build_branch_heads_asset(name)],
        instance=instance,
        partition_key="main",
        resources=dict(defs.resources or {}),
        raise_on_error=False,
    )

    assert result.success
    # One Spark job per window of commits (``history.VALIDATION_WINDOW``): the fixture's first commit and the
    # built one are validated together, their new ranges spread over ``workers`` partitions.
    assert _stage_tasks(spark, before) == [workers]
    assert_mirror_equals_source(case.src, case.repo, case.dst, name)
