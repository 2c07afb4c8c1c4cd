"""``commit_sensor.log_commit_page_size``, ``list_branch_page_size`` and ``branches_scanner_concurrency_limit`` at work
on a real lakeFS."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import MirrorEngine

from .conftest import InFlight, assert_mirror_equals_source, content, lakefs_operation_count

ENV = "REPLICATION_COMMIT_SENSOR_"


@pytest.fixture
def region_b_with(config_path: Callable[[str], Path]) -> Iterator[Callable[..., ReplicationService]]:
    """region-b's service with commit_sensor keys set through their environment variables."""
    services: list[ReplicationService] = []

    def make(**keys: int) -> ReplicationService:
        env = {ENV + key.upper(): str(value) for key, value in keys.items()}
        services.append(ReplicationService(load_config(config_path("region-b"), env=env)))
        return services[-1]

    yield make
    for s in services:
        s.close()


def _new_mirror(lakefs_env: Any, svc_a: ReplicationService, repo: str, mirror: str) -> None:
    svc_a.create_mirror(
        source_repository=repo,
        name=mirror,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(mirror),
    )


def _count_log_pages(svc: ReplicationService, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Spy on the real source client of ``svc``: one entry (the page size asked) per log page requested."""
    refs = svc.client("region-a").refs
    pages: list[int] = []
    original = refs.log_commits

    def spy(*args: Any, **kwargs: Any) -> Any:
        pages.append(kwargs["amount"])
        return original(*args, **kwargs)

    monkeypatch.setattr(refs, "log_commits", spy)
    return pages


def test_the_source_log_is_read_in_pages_of_log_commit_page_size(
    lakefs_env, service_for, region_b_with, unique_name, monkeypatch
) -> None:
    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo, mirror = unique_name("logpage"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    for i in range(6):
        src.upload_object(repo, "main", f"data/{i}", content(f"data/{i}"))
        src.commit(repo, "main", f"commit {i}")
    _new_mirror(lakefs_env, svc_a, repo, mirror)
    total = len(list(src.log_commits(repo, "main")))  # the six and lakeFS's initial commit

    svc_b = region_b_with(log_commit_page_size=2)
    assert svc_b.engine_settings().log_page_size == 2
    pages = _count_log_pages(svc_b, monkeypatch)
    [first] = svc_b.sync(name=mirror)
    assert first.ok and next(r for r in first.refs if r.name == "main").stats.commits == total
    assert pages == [2] * math.ceil(total / 2)
    assert_mirror_equals_source(src, repo, svc_b.client("region-b"), mirror)

    # Three new commits: the log is read only until the mirror's head, not through the whole history again.
    pages.clear()
    for i in range(3):
        src.upload_object(repo, "main", f"more/{i}", content(f"more/{i}"))
        src.commit(repo, "main", f"more {i}")
    [second] = svc_b.sync(name=mirror)
    assert second.ok and next(r for r in second.refs if r.name == "main").stats.commits == 3
    assert pages == [2, 2]
    assert_mirror_equals_source(src, repo, svc_b.client("region-b"), mirror)


@pytest.mark.parametrize("limit", [1, 4])
def test_branches_sync_on_at_most_branches_scanner_concurrency_limit_workers(
    lakefs_env, service_for, region_b_with, unique_name, monkeypatch, limit
) -> None:
    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo, mirror = unique_name("branches"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "base", content("base"))
    src.commit(repo, "main", "base")
    branches = [f"feature-{i}" for i in range(6)]
    for name in branches:  # each with a commit of its own, over the shared base
        src.create_branch(repo, name, "main")
        src.upload_object(repo, name, f"{name}/data", content(name, 500))
        src.commit(repo, name, f"work on {name}")
    _new_mirror(lakefs_env, svc_a, repo, mirror)

    svc_b = region_b_with(branches_scanner_concurrency_limit=limit)
    assert svc_b.engine_settings().branch_workers == limit
    in_flight = InFlight(expected=limit)
    monkeypatch.setattr(MirrorEngine, "sync_ref", in_flight.wrap(MirrorEngine.sync_ref))
    [result] = svc_b.sync(name=mirror)

    assert result.ok
    assert [r.name for r in result.refs] == sorted(["main", *branches])  # reported in name order either way
    assert all(r.action == "created" for r in result.refs)
    assert in_flight.peak == limit
    assert_mirror_equals_source(src, repo, svc_b.client("region-b"), mirror)
    for name in branches:
        assert svc_b.client("region-b").get_object(mirror, name, f"{name}/data") == content(name, 500)


@pytest.mark.parametrize(("page_size", "pages"), [(2, 3), (1000, 1)])
def test_the_source_branches_are_listed_in_pages_of_list_branch_page_size(
    lakefs_env, service_for, region_b_with, unique_name, page_size, pages
) -> None:
    """Six branches at the source: lakeFS itself counts the ListBranches requests a sync sends it."""
    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo, mirror = unique_name("branchpage"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "base", content("base"))
    src.commit(repo, "main", "base")
    for i in range(5):
        src.create_branch(repo, f"b{i}", "main")
    _new_mirror(lakefs_env, svc_a, repo, mirror)

    svc_b = region_b_with(list_branch_page_size=page_size)
    source_endpoint = lakefs_env.region("region-a").endpoint
    before = lakefs_operation_count(source_endpoint, "ListBranches")
    [result] = svc_b.sync(name=mirror)
    assert result.ok
    assert lakefs_operation_count(source_endpoint, "ListBranches") - before == pages
    assert_mirror_equals_source(src, repo, svc_b.client("region-b"), mirror)
