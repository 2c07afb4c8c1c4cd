"""A pass asks the source for the time of no branch head the mirror's branch records already hold: what a sync
costs the source grows with the branches that moved, not with the branches it has."""

from __future__ import annotations

import datetime as dt

from .conftest import assert_mirror_equals_source, content, lakefs_operation_count

UNCHANGED = 6


def test_a_pass_reads_the_commits_of_moved_branches_only(lakefs_env, service_for, unique_name) -> None:  # type: ignore[no-untyped-def]
    src_svc, dst_svc = service_for("region-a"), service_for("region-c")
    src = src_svc.client("region-a")
    endpoint = lakefs_env.region("region-a").endpoint
    repo, mirror_name = unique_name("times"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "base", content("base"))
    src.commit(repo, "main", "base")
    branches = [f"b{i}" for i in range(UNCHANGED)]
    for name in branches:  # each branch at a head of its own: no commit read serves two branches
        src.create_branch(repo, name, "main")
        src.upload_object(repo, name, f"{name}/data", content(name))
        src.commit(repo, name, f"{name}'s own commit")
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=mirror_name,
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(mirror_name),
    )
    [first] = dst_svc.sync(name=mirror_name)
    assert first.ok, first.to_json()

    src.upload_object(repo, "main", "more", content("more"))
    moved = src.commit(repo, "main", "one more commit")
    before = lakefs_operation_count(endpoint, "GetCommit")
    [second] = dst_svc.sync(name=mirror_name)
    asked = lakefs_operation_count(endpoint, "GetCommit") - before
    assert second.ok, second.to_json()
    assert {r.name: r.action for r in second.refs if r.action != "unchanged"} == {"main": "advanced"}
    # the moved head and its parent at most (its time, the ranges it is built from): none per unchanged branch
    assert asked <= 2, f"{asked} GetCommit requests for one moved branch and {UNCHANGED} unchanged ones"

    before = lakefs_operation_count(endpoint, "GetCommit")
    [third] = dst_svc.sync(name=mirror_name)
    assert third.ok, third.to_json()
    assert all(r.action == "unchanged" for r in third.refs)
    assert lakefs_operation_count(endpoint, "GetCommit") - before == 0

    # what ``status`` reports is as before: every branch at its source head, with that head's time
    records = {b.branch: b for b in dst_svc.mirrors.get_branches(mirror.id)}
    assert set(records) == {"main", *branches}
    for name, record in records.items():
        head = src.get_commit(repo, src.get_branch_head(repo, name))
        assert record.in_sync and record.source_commit_id == head.id, name
        assert record.source_commit_time == dt.datetime.fromtimestamp(head.creation_date, dt.UTC), name
    main = next(r for r in second.refs if r.name == "main")
    assert main.source_commit == moved.id and main.source_commit_time == moved.creation_date
    assert main.lag_seconds is not None and records["main"].lag_seconds == main.lag_seconds
    assert_mirror_equals_source(src, repo, dst_svc.client("region-c"), mirror_name)
