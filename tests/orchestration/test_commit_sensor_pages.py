"""``commit_sensor.list_branch_page_size`` on Dagster: a tick of a mirror's commit sensor lists the source's branches
in pages of that size, as lakeFS's own ``/metrics`` counts the ListBranches requests it answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.orchestration.definitions import build_definitions
from lakefs_mirror_dagster.orchestration.mirroring import commit_sensor_name
from lakefs_mirror_dagster.region import ReplicationService
from tests.replication.conftest import content, lakefs_operation_count


@pytest.mark.parametrize(("page_size", "pages"), [(2, 3), (1000, 1)])
def test_a_commit_sensor_tick_lists_the_source_branches_in_pages_of_list_branch_page_size(
    lakefs_env: Environment,
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    unique_name: Callable[[str], str],
    instance: dg.DagsterInstance,
    tmp_path: Path,
    page_size: int,
    pages: int,
) -> None:
    path, service = isolated_regions
    src = service("region-a").client("region-a")
    repo, name = unique_name("sensorpage"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "base", content("base"))
    src.commit(repo, "main", "base")
    for i in range(5):  # six branches with main
        src.create_branch(repo, f"b{i}", "main")
    mirror = service("region-a").create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    service("region-b").activate(mirror)
    config_file = config_variant(
        path("region-b"), tmp_path / "paged.yaml", commit_sensor={"list_branch_page_size": page_size}
    )
    defs = build_definitions([name], config=load_config(config_file, env={}), config_path=str(config_file), reload=None)
    sensor = defs.resolve_sensor_def(commit_sensor_name(name))
    endpoint = lakefs_env.region("region-a").endpoint

    before = lakefs_operation_count(endpoint, "ListBranches")
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        result = sensor(context)
    assert lakefs_operation_count(endpoint, "ListBranches") - before == pages
    assert isinstance(result, dg.SensorResult)
    assert sorted(k for r in result.dynamic_partitions_requests or [] for k in r.partition_keys) == sorted(
        ["main", *(f"b{i}" for i in range(5))]
    )
