"""A long history's first sync asks the destination lakeFS and the mirrors database a few questions per window of
commits, not a few per commit, and leaves every commit of it complete at the mirror."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from lakefs_mirror_dagster.replication.history import VALIDATION_WINDOW

from .conftest import assert_mirror_equals_source, assert_ref_complete, content, lakefs_operation_count

COMMITS = 70


def test_a_long_history_is_synced_with_a_few_questions_per_window(lakefs_env, service_for, unique_name) -> None:  # type: ignore[no-untyped-def]
    src_svc, dst_svc = service_for("region-a"), service_for("region-c")
    src = src_svc.client("region-a")
    repo, mirror_name = unique_name("history"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    commits = []
    for i in range(COMMITS):
        src.upload_object(repo, "main", f"log/{i:04d}.txt", content(f"commit {i}"))
        commits.append(src.commit(repo, "main", f"commit {i}").id)
    src_svc.create_mirror(
        source_repository=repo,
        name=mirror_name,
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(mirror_name),
    )
    marks: list[Mapping[str, str]] = []
    mark: Callable[..., Any] = dst_svc.mirrors.mark_ranges_validated

    def counted(namespace: str, fingerprints: Mapping[str, str]) -> int:
        marks.append(dict(fingerprints))
        return int(mark(namespace, fingerprints))

    dst_svc.mirrors.mark_ranges_validated = counted  # type: ignore[method-assign]
    destination = lakefs_env.region("region-c").endpoint
    before = lakefs_operation_count(destination, "GetCommit")
    [result] = dst_svc.sync(name=mirror_name)
    asked = lakefs_operation_count(destination, "GetCommit") - before
    assert result.ok, result.to_json()

    # which commits the mirror lacks: found by galloping down the history, not asked commit by commit
    assert asked <= 2 * math.log2(COMMITS) + 4, f"{asked} GetCommit requests at the destination for {COMMITS} commits"
    # validation marks: ranges, then metaranges, once per window of metaranges
    windows = math.ceil((COMMITS + 1) / VALIDATION_WINDOW)
    assert len(marks) <= 2 * windows, f"{len(marks)} mark transactions for {windows} windows"
    marked = {f for m in marks for f in m}
    for commit_id in commits:  # every commit's metarange validated, and complete at the mirror
        commit = src.get_commit(repo, commit_id)
        assert commit.metarange_id in marked, commit_id
        assert_ref_complete(dst_svc, mirror_name, commit_id)
    assert_mirror_equals_source(src, repo, dst_svc.client("region-c"), mirror_name)

    [again] = dst_svc.sync(name=mirror_name)
    assert again.ok and all(r.action == "unchanged" for r in again.refs), again.to_json()
