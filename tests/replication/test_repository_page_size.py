"""``list_repositories_page_size`` at work on a real lakeFS: creating a mirror checks that its storage namespace is
no repository's at the destination by listing them all, a page of that many at a time."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService

from .conftest import lakefs_operation_count


@pytest.mark.parametrize("page_size", [2, 1000])
def test_creating_a_mirror_lists_the_destination_repositories_in_pages_of_the_configured_size(
    lakefs_env, client_for, config_path: Callable[[str], Path], unique_name, page_size
) -> None:
    src, dst = client_for("region-a"), client_for("region-b")
    repo, mirror = unique_name("repopage"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    for _ in range(5):  # at least five repositories at the destination, whatever ran before
        other = unique_name("other")
        dst.create_repository(other, lakefs_env.region("region-b").namespace_for(other))
    count = len(list(dst.list_repositories()))
    assert count >= 5
    env = {"REPLICATION_LIST_REPOSITORIES_PAGE_SIZE": str(page_size)}
    service = ReplicationService(load_config(config_path("region-a"), env=env))
    try:
        endpoint = lakefs_env.region("region-b").endpoint
        before = lakefs_operation_count(endpoint, "ListRepositories")
        service.create_mirror(
            source_repository=repo,
            name=mirror,
            region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(mirror),
        )
        assert lakefs_operation_count(endpoint, "ListRepositories") - before == math.ceil(count / page_size)
    finally:
        service.close()
