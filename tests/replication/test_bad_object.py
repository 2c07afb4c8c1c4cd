"""One bad object, branch or mirror never stops the others: a source object rotted at rest blocks only the
branch that holds it (reported with the object's address), while every other branch, tag and mirror of the
same pass converges; a mirror that cannot be synced at all (its name taken by someone's own repository)
is reported and skipped."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from lakefs_mirror_devenv import Environment

from .conftest import assert_mirror_equals_source, content, rot_at_source
from .test_retry_schedule import with_cooldowns

pytestmark = pytest.mark.integration


def test_a_rotten_object_blocks_only_its_branch(lakefs_env: Environment, isolated_regions, unique_name) -> None:
    config_path, service = isolated_regions  # a mirrors database of this test's own: the whole pass is this test's
    with_cooldowns(config_path("region-b"))  # a blocked branch is retried 2s later at the earliest
    src_svc, dst_svc = service("region-a"), service("region-b")
    src = src_svc.client("region-a")
    region_a, region_b = lakefs_env.region("region-a"), lakefs_env.region("region-b")

    repo, other_repo, taken_repo = unique_name("rot"), unique_name("fine"), unique_name("taken")
    for name in (repo, other_repo, taken_repo):
        src.create_repository(name, region_a.namespace_for(name))
        src.upload_object(name, "main", "data/a.bin", content(f"{name}/a", 300))
        src.commit(name, "main", "first")
    src.create_tag(repo, "v1", "main")
    src.create_branch(repo, "bad", "main")
    src.upload_object(repo, "bad", "data/rot.bin", content("rot", 2000))
    bad_head = src.commit(repo, "bad", "an object that will rot at the source").id

    # Rot it at rest in the source's store: same size, one byte flipped; lakeFS still records the old MD5.
    repair = rot_at_source(lakefs_env, src, repo, "bad", "data/rot.bin", offset=1000)

    mirrors = {
        name: src_svc.create_mirror(
            source_repository=name,
            name=unique_name("m"),
            region="region-b",
            storage_namespace=region_b.namespace_for(unique_name("ns")),
        )
        for name in (repo, other_repo, taken_repo)
    }
    dst = dst_svc.client("region-b")
    taken = mirrors[taken_repo].name  # someone creates a writable repository under the mirror's name
    dst.create_repository(taken, region_b.namespace_for(unique_name("own")))

    results = {r.source_repository: r for r in dst_svc.sync()}
    assert set(results) == {repo, other_repo, taken_repo}, "one mirror's failure ended the pass"
    assert "is not this mirror" in (results[taken_repo].error or ""), results[taken_repo].to_json()
    assert not dst.get_repository(taken).read_only, "the user's repository was touched"
    assert results[other_repo].ok, results[other_repo].to_json()

    refs = {(r.kind, r.name): r for r in results[repo].refs}
    blocked = refs[("branch", "bad")]
    assert blocked.action == "blocked", blocked.to_json()
    address = src.stat_object(repo, "bad", "data/rot.bin").physical_address.rsplit("/data/", 1)[1]
    assert f"data/{address}" in (blocked.error or "") and "MD5" in (blocked.error or ""), blocked.error
    assert refs[("branch", "main")].ok and refs[("tag", "v1")].ok, results[repo].to_json()

    mirror = mirrors[repo].name
    assert "bad" not in {b.id for b in dst.list_branches(mirror)}, "promoted onto a rotten object"
    assert dst.get_branch_head(mirror, "main") == src.get_branch_head(repo, "main")
    assert {t.id: t.commit_id for t in dst.list_tags(mirror)} == {"v1": src.get_branch_head(repo, "main")}
    assert_mirror_equals_source(src, other_repo, dst, mirrors[other_repo].name)

    # Once the source serves the bytes lakeFS recorded again, the first pass after the cooldown promotes it.
    repair()
    block = dst_svc.mirrors.get_branch(mirrors[repo].id, "bad")
    assert block is not None and block.retry_after is not None, block
    time.sleep(max(0.0, (block.retry_after - dt.datetime.now(dt.UTC)).total_seconds() + 0.1))
    [again] = dst_svc.sync(name=mirror)
    assert again.ok, again.to_json()
    assert dst.get_branch_head(mirror, "bad") == bad_head
    assert_mirror_equals_source(src, repo, dst, mirror)


def test_a_mirror_record_error_stops_only_that_mirror(
    lakefs_env: Environment, isolated_regions, unique_name, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror whose record another region changed under this one (a lost compare-and-set) is reported; the
    other mirrors of the pass still sync. Only a database that is down ends a pass."""
    from lakefs_mirror_dagster.mirrors import ConcurrentUpdate

    _config_path, service = isolated_regions
    src_svc, dst_svc = service("region-a"), service("region-b")
    src = src_svc.client("region-a")
    region_a, region_b = lakefs_env.region("region-a"), lakefs_env.region("region-b")
    mirrors = []
    for _ in range(2):
        repo = unique_name("src")
        src.create_repository(repo, region_a.namespace_for(repo))
        src.upload_object(repo, "main", "data/a.bin", content(repo, 100))
        src.commit(repo, "main", "first")
        mirrors.append(
            src_svc.create_mirror(
                source_repository=repo,
                name=unique_name("m"),
                region="region-b",
                storage_namespace=region_b.namespace_for(unique_name("ns")),
            )
        )
    contested, fine = mirrors
    activate = dst_svc.activate

    def racing(mirror):  # another region moved this mirror's record between our read and our write
        if mirror.id == contested.id:
            raise ConcurrentUpdate("mirror changed", mirror_id=mirror.id, expected=1, actual=2)
        return activate(mirror)

    monkeypatch.setattr(dst_svc, "activate", racing)
    results = {r.mirror: r for r in dst_svc.sync()}
    assert set(results) == {contested.name, fine.name}, "one mirror's record error ended the pass"
    assert "ConcurrentUpdate" in (results[contested.name].error or ""), results[contested.name].to_json()
    assert results[fine.name].ok, results[fine.name].to_json()
