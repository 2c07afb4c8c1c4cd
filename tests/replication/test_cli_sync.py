"""`lakefs-mirror sync` as an operator runs it: one line per ref, a clear error for an unknown mirror."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.cli import main


def test_sync_prints_each_ref(lakefs_env, config_path, service_for, unique_name, capsys) -> None:
    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo, name = unique_name("cli"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "x", b"x")
    src.commit(repo, "main", "x")
    svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    assert main(["--config", str(config_path("region-b")), "sync", "--once", "--mirror", name]) == 0
    out = capsys.readouterr().out
    assert f"mirror {name} <- {repo}" in out and "main" in out and "created" in out
    assert main(["--config", str(config_path("region-b")), "sync", "--once", "--mirror", "nope"]) == 2


def test_deleting_a_mirror_removes_its_repository_and_record(lakefs_env, isolated_regions, unique_name):
    from lakefs_mirror_dagster.mirrors import MirrorNotFound

    config_path, service_for = isolated_regions  # `sync --once` passes over this test's mirrors only
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    src = svc_a.client("region-a")
    repo, name = unique_name("del"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "x", b"x")
    src.commit(repo, "main", "x")
    mirror = svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    assert svc_b.sync(name=name)[0].ok
    assert main(["--config", str(config_path("region-a")), "mirrors", "delete", mirror.id, "--yes"]) == 0
    assert main(["--config", str(config_path("region-b")), "sync", "--once"]) == 0
    # (getRepository may serve a just-deleted repository from lakeFS's cache; the listing does not.)
    assert name not in {r.id for r in svc_b.client("region-b").list_repositories()}
    with pytest.raises(MirrorNotFound):
        svc_b.mirrors.get_mirror(mirror.id)
    assert src.get_repository(repo).id == repo, "the source is untouched"
