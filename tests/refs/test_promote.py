"""Promoting a mirror to a writable repository in its region (disaster recovery), against real lakeFS."""

from __future__ import annotations

import json

import pytest

from lakefs_mirror_dagster.lakefs import LakeFSForbidden
from lakefs_mirror_dagster.mirrors import MirrorNotFound
from lakefs_mirror_dagster.refs import RefsError

from .conftest import populate, read_all, snapshot


def test_promoted_mirror_accepts_commits_and_is_no_longer_replicated(
    lakefs_env, service_for, config_path, run_cli, unique_name, tmp_path, capsys
) -> None:
    src_svc, dst_svc = service_for("region-a"), service_for("region-b")
    src, dst = src_svc.client("region-a"), dst_svc.client("region-b")
    repo, name = unique_name("dr-src"), unique_name("dr-mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    expected = populate(src, repo)
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    [result] = dst_svc.sync(name=name)
    assert result.ok, result.to_json()
    assert dst.get_repository(name).read_only
    with pytest.raises(LakeFSForbidden):
        dst.upload_object(name, "main", "x.txt", b"refused while a mirror")
    source_state = snapshot(src, repo)

    assert run_cli(config_path("region-b"), "mirrors", "promote", name, "--manifest-dir", str(tmp_path)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["branches"] == source_state["branches"] and report["tags"] == source_state["tags"]

    promoted = dst.get_repository(name)
    assert not promoted.read_only
    assert promoted.storage_namespace == mirror.storage_namespace
    promoted_state = snapshot(dst, name)
    del promoted_state["default_branch"], source_state["default_branch"]
    assert promoted_state == source_state
    assert read_all(dst, name, "main") == expected
    dst.upload_object(name, "main", "written-after-failover.txt", b"region-b now takes writes")
    commit = dst.commit(name, "main", "first commit after promotion")
    assert commit.parents == (source_state["branches"]["main"],)
    assert dst.get_object(name, "main", "written-after-failover.txt") == b"region-b now takes writes"

    with pytest.raises(MirrorNotFound):
        dst_svc.mirrors.get_mirror(mirror.id)
    assert dst_svc.sync(name=name) == []  # replication stopped: no pass touches the promoted repository
    assert dst.get_branch_head(name, "main") == commit.id
    assert (tmp_path / f"{name}_manifest.json").exists()


def test_promote_refuses_unknown_mirrors_and_writable_repositories(
    service_for, config_path, run_cli, unique_name
) -> None:
    with pytest.raises(RefsError, match="no mirror named 'nope-404' in region region-b"):
        run_cli(config_path("region-b"), "mirrors", "promote", "nope-404")
    # A mirror whose repository was never created (no sync yet): nothing to promote, nothing changes.
    src_svc, dst_svc = service_for("region-a"), service_for("region-b")
    repo = unique_name("dr-pending")
    src_svc.client("region-a").create_repository(repo, f"s3://region-a/{repo}")
    mirror = src_svc.create_mirror(
        source_repository=repo, name=unique_name("dr-p"), region="region-b", storage_namespace=f"local://{repo}-m"
    )
    with pytest.raises(RefsError, match="has no repository in region region-b yet"):
        run_cli(config_path("region-b"), "mirrors", "promote", mirror.name)
    assert dst_svc.mirrors.get_mirror(mirror.id).state == mirror.state


def test_failed_restore_puts_the_read_only_mirror_back(
    lakefs_env, service_for, config_path, run_cli, unique_name, monkeypatch
) -> None:
    """If lakeFS refuses the writable restore, the mirror is read-only and active again, with the same refs."""
    import lakefs_mirror_dagster.refs.promote as promote_module
    from lakefs_mirror_dagster.mirrors import MirrorState

    src_svc, dst_svc = service_for("region-a"), service_for("region-b")
    src, dst = src_svc.client("region-a"), dst_svc.client("region-b")
    repo, name = unique_name("dr-fail"), unique_name("dr-fail-m")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "a.txt", b"a")
    src.commit(repo, "main", "a")
    mirror = src_svc.create_mirror(
        source_repository=repo, name=name, region="region-b", storage_namespace=f"local://{name}"
    )
    [result] = dst_svc.sync(name=name)
    assert result.ok
    before = snapshot(dst, name)

    real = promote_module.restore_repository

    def refuse_writable(client, manifest, **kwargs):
        if not kwargs.get("read_only"):
            raise RefsError("injected: lakeFS refused the restore")
        return real(client, manifest, **kwargs)

    monkeypatch.setattr(promote_module, "restore_repository", refuse_writable)
    with pytest.raises(RefsError, match="injected"):
        run_cli(config_path("region-b"), "mirrors", "promote", name)
    assert dst.get_repository(name).read_only
    assert snapshot(dst, name) == before
    assert dst_svc.mirrors.get_mirror(mirror.id).state == MirrorState.ACTIVE
    # Replication carries on: a new source commit reaches the mirror.
    src.upload_object(repo, "main", "b.txt", b"b")
    head = src.commit(repo, "main", "b").id
    [again] = dst_svc.sync(name=name)
    assert again.ok and dst.get_branch_head(name, "main") == head
