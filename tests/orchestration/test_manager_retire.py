"""The mirrors-manager sensor retires a deleted mirror the way ``sync`` does: it removes the mirror's own
read-only repository, and refuses (keeping it) a repository of that name that is writable or lives on
another namespace, which is someone else's."""

from __future__ import annotations

import time

import pytest

from lakefs_mirror_dagster.mirrors import MirrorNotFound, MirrorState
from lakefs_mirror_dagster.orchestration.mirroring.manager import reconcile_mirrors

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("intruder", ["writable", "other-namespace"])
def test_the_manager_never_deletes_a_repository_that_is_not_the_mirror(
    lakefs_env, isolated_regions, unique_name, intruder: str
) -> None:
    _, service = isolated_regions
    src_svc, dst_svc = service("region-a"), service("region-b")
    src, dst = src_svc.client("region-a"), dst_svc.client("region-b")
    region_b = lakefs_env.region("region-b")
    repo = unique_name("src")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=region_b.namespace_for(unique_name("ns")),
    )
    # Someone else's repository under the mirror's name: writable, or read-only on another namespace.
    dst.create_repository(
        mirror.name, region_b.namespace_for(unique_name("own")), read_only=intruder == "other-namespace"
    )
    dst_svc.mirrors.set_state(mirror.id, MirrorState.DELETING, "deleted by a test", None)

    report = reconcile_mirrors(dst_svc)
    assert "not this mirror's" in report.errors.get(mirror.name, ""), report
    assert dst.get_repository(mirror.name).id == mirror.name, "someone else's repository was deleted"
    assert dst_svc.mirrors.get_mirror(mirror.id).state == MirrorState.DELETING, "the record went without its repo"

    # Once the name is free again, a later tick retires the mirror: record gone. (lakeFS may serve a
    # just-deleted repository from its cache for a few seconds, so that tick may not be the next one.)
    dst.delete_repository(mirror.name, force=True)
    deadline = time.monotonic() + 60
    for _ in range(120):
        report = reconcile_mirrors(dst_svc)
        if report.deleted or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert report.deleted == [mirror.name] and not report.errors, report
    with pytest.raises(MirrorNotFound):
        dst_svc.mirrors.get_mirror(mirror.id)
