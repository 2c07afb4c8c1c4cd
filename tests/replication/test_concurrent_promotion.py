"""Two syncs of one mirror racing: the slower one never moves a mirror ref that changed since it read it.

Without the guard, a sync that prepared an older source head would promote after a faster sync had already
advanced the mirror, moving the mirror branch backwards (a reset nobody asked for).
"""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.replication.history import PreparedRef

from .conftest import content

pytestmark = pytest.mark.integration


def test_a_sync_that_lost_the_race_does_not_promote(lakefs_env, service_for, unique_name) -> None:
    src_svc = service_for("region-a")
    src = src_svc.client("region-a")
    repo = unique_name("race")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "a.bin", content("a", 100))
    first = src.commit(repo, "main", "first").id
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    slow_svc = service_for("region-b")
    assert slow_svc.sync(name=mirror.name)[0].ok
    src.upload_object(repo, "main", "b.bin", content("b", 100))
    second = src.commit(repo, "main", "second").id

    record = next(slow_svc.my_mirrors(name=mirror.name))
    slow = slow_svc.engine_for(record)
    prepare = slow.prepare

    def prepare_then_lose_the_race(kind: str, name: str, target: str) -> PreparedRef:
        prepared = prepare(kind, name, target)
        src.upload_object(repo, "main", "c.bin", content("c", 100))
        src.commit(repo, "main", "third")
        fast = slow_svc.engine_for(record)  # another process's sync, done before the slow one promotes
        assert fast.sync_branch("main").action == "advanced"
        return prepared

    slow.prepare = prepare_then_lose_the_race  # type: ignore[method-assign]
    lost = slow.sync_ref("branch", "main", second, first)
    assert lost.action == "blocked" and "moved from" in (lost.error or ""), lost.to_json()
    dst = slow_svc.client("region-b")
    assert dst.get_branch_head(mirror.name, "main") == src.get_branch_head(repo, "main"), "moved backwards"
