"""``validator.num_workers`` at work: the ranges of one metarange are validated by at most that many workers at once,
on a real lakeFS whose commit has several ranges (written by the benchmarks' ranges builder)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks._ranges_build import RangeSplit, build_with_ranges
from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import plugs

from .conftest import InFlight, assert_mirror_equals_source, assert_ref_complete, content

OBJECTS = 1_200


@pytest.mark.parametrize("workers", [1, 3])
def test_ranges_are_validated_by_at_most_num_workers_at_once(
    lakefs_env, service_for, config_path: Callable[[str], Path], unique_name, monkeypatch, workers
) -> None:
    region = lakefs_env.region("region-a")
    src = service_for("region-a").client("region-a")
    repo, mirror = unique_name("validators"), unique_name("mirror")
    src.create_repository(repo, region.namespace_for(repo))
    made = build_with_ranges(
        src,
        repo,
        region.namespace_for(repo),
        blockstore=region.blockstore,
        objects=OBJECTS,
        path_of=lambda i: f"tables/t/part-{i:05d}.bin",
        payload=lambda i: content(f"part-{i}", 100 + i % 57),
        split=RangeSplit(raggedness=200),
    )
    assert len(made.range_ids) > 3  # more ranges than the most workers asked for
    service_for("region-a").create_mirror(
        source_repository=repo,
        name=mirror,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(mirror),
    )
    service = ReplicationService(
        load_config(config_path("region-b"), env={"REPLICATION_VALIDATOR_NUM_WORKERS": str(workers)})
    )
    try:
        in_flight = InFlight(expected=workers)
        monkeypatch.setattr(plugs, "validate_range", in_flight.wrap(plugs.validate_range))
        [result] = service.sync(name=mirror)
        assert result.ok, result.to_json()
        assert in_flight.calls == len(made.range_ids)  # every range once
        assert in_flight.peak == workers
        assert_ref_complete(service, mirror, made.commit_id)
        assert_mirror_equals_source(src, repo, service.client("region-b"), mirror)
    finally:
        service.close()
