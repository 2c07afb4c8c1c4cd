"""Refs dump and restore against real lakeFS: moving a repository between stores keeps every commit ID."""

from __future__ import annotations

import json

import pytest

from lakefs_mirror_dagster.cli import ExitCode
from lakefs_mirror_dagster.cli import main as cli_main
from lakefs_mirror_dagster.lakefs import LakeFSNotFound
from lakefs_mirror_dagster.refs import RefsError, load_manifest

from .conftest import content, populate, read_all, snapshot


def test_move_from_minio_to_local_keeps_every_commit_branch_and_tag(
    lakefs_env, client_for, config_path, migration_config, run_cli, unique_name, tmp_path
) -> None:
    src, dst = client_for("region-a"), client_for("region-b")
    repo = unique_name("move")
    old_ns = lakefs_env.region("region-a").namespace_for(repo)
    src.create_repository(repo, old_ns)
    expected = populate(src, repo)
    # An uncommitted change: --commit must commit it, or it would be lost.
    src.upload_object(repo, "old", "late.txt", b"uncommitted at dump time")
    expected_old = {**read_all(src, repo, "v1"), "late.txt": b"uncommitted at dump time"}

    assert (
        run_cli(config_path("region-a"), "refs", "dump", repo, "--commit", "--rm", "--output-dir", str(tmp_path)) == 0
    )
    manifest_file = tmp_path / f"{repo}_manifest.json"
    doc = json.loads(manifest_file.read_text())
    assert doc["repository"] == {"name": repo, "storage_namespace": old_ns, "default_branch": "main", "storage_id": ""}
    assert set(doc["refs"]) == {"commits_meta_range_id", "tags_meta_range_id", "branches_meta_range_id"}
    with pytest.raises(LakeFSNotFound):
        src.get_repository(repo)  # --rm removed the record ...
    before_branches = {"main", "feature", "old"}

    new_ns = f"local://{repo}-moved"
    assert (
        run_cli(migration_config, "refs", "restore", str(manifest_file), "--to-namespace", new_ns, "--copy-data") == 0
    )

    moved = dst.get_repository(repo)
    assert moved.storage_namespace == new_ns and not moved.read_only
    after = snapshot(dst, repo)
    assert set(after["branches"]) == before_branches
    assert set(after["tags"]) == {"v1", "v2"}
    assert after["tags"]["v2"] == after["branches"]["main"]
    # The dumped manifest's namespace was rewritten only in the restore, never in the file.
    assert load_manifest(manifest_file).storage_namespace == old_ns
    # ... but the data stayed in MinIO: a restore there gives the very same commits (IDs and fields).
    assert run_cli(config_path("region-a"), "refs", "restore", str(manifest_file)) == 0
    assert snapshot(src, repo) == after
    assert read_all(dst, repo, "main") == expected
    assert read_all(dst, repo, "old") == expected_old
    for tag in ("v1", "v2"):
        assert read_all(dst, repo, tag) == read_all(src, repo, tag)
    # The moved repository is an ordinary writable repository on the new store.
    dst.upload_object(repo, "main", "after-move.txt", content("after", 10))
    commit = dst.commit(repo, "main", "first commit on local storage")
    assert commit.parents == (after["branches"]["main"],)


def test_dump_and_restore_on_the_same_store_without_copy(
    client_for, config_path, run_cli, unique_name, tmp_path, capsys
):
    client = client_for("region-b")
    repo = unique_name("same")
    client.create_repository(repo, f"local://{repo}")
    expected = populate(client, repo)
    before = snapshot(client, repo)

    # Through the real entry point, which asks before --rm deletes: no terminal here, so --yes says it.
    dump = ["--config", str(config_path("region-b")), "refs", "dump", repo, "--rm", "--output-dir", str(tmp_path)]
    assert cli_main(dump) == ExitCode.USAGE
    assert "pass --yes" in capsys.readouterr().err
    assert client.get_repository(repo).id == repo  # refused: nothing removed
    assert cli_main([*dump, "--yes"]) == 0
    with pytest.raises(LakeFSNotFound):
        client.get_repository(repo)
    # A dry run checks the manifest and lakeFS, says what it would do, and restores nothing.
    manifest = str(tmp_path / f"{repo}_manifest.json")
    assert run_cli(config_path("region-b"), "refs", "restore", manifest, "--dry-run") == 0
    assert f"would restore {repo} on local://{repo}" in capsys.readouterr().out
    assert repo not in {r.id for r in client.list_repositories()}
    assert run_cli(config_path("region-b"), "refs", "restore", manifest) == 0

    assert snapshot(client, repo) == before
    assert read_all(client, repo, "main") == expected
    client.upload_object(repo, "feature", "more.txt", b"more")
    assert client.commit(repo, "feature", "after restore").parents == (before["branches"]["feature"],)


def test_dump_refuses_uncommitted_changes_and_removes_nothing(client_for, config_path, run_cli, unique_name, tmp_path):
    client = client_for("region-b")
    repo = unique_name("dirty")
    client.create_repository(repo, f"local://{repo}")
    client.upload_object(repo, "main", "x.txt", b"staged")
    with pytest.raises(RefsError, match=r"main have uncommitted changes.*--commit"):
        run_cli(config_path("region-b"), "refs", "dump", repo, "--rm", "--output-dir", str(tmp_path))
    assert client.get_repository(repo).id == repo
    assert client.get_object(repo, "main", "x.txt") == b"staged"
    assert not list(tmp_path.iterdir())
    with pytest.raises(RefsError, match="--all"):
        run_cli(config_path("region-b"), "refs", "dump", "--output-dir", str(tmp_path))
    with pytest.raises(LakeFSNotFound, match="no-such-repo"):
        run_cli(config_path("region-b"), "refs", "dump", repo, "no-such-repo", "--output-dir", str(tmp_path))
    assert not list(tmp_path.iterdir())  # the existing one was not dumped either: names are checked first


def test_ignore_storage_id_restores_a_multi_store_manifest_on_a_single_store_lakefs(
    client_for, config_path, run_cli, unique_name, tmp_path
) -> None:
    """A manifest dumped where repositories carry a storage id (a lakeFS with several blockstores) names a store this
    open-source lakeFS does not know: refused as it is, restored with ``--ignore-storage-id`` onto its one store."""
    client = client_for("region-b")
    repo = unique_name("sid")
    client.create_repository(repo, f"local://{repo}")
    expected = populate(client, repo)
    before = snapshot(client, repo)
    assert run_cli(config_path("region-b"), "refs", "dump", repo, "--rm", "--output-dir", str(tmp_path)) == 0
    manifest_file = tmp_path / f"{repo}_manifest.json"
    doc = json.loads(manifest_file.read_text())
    doc["repository"]["storage_id"] = "local-disk"
    manifest_file.write_text(json.dumps(doc))

    with pytest.raises(RefsError, match=r"storage id 'local-disk' is unknown.*pass --ignore-storage-id"):
        run_cli(config_path("region-b"), "refs", "restore", str(manifest_file))
    with pytest.raises(LakeFSNotFound):
        client.get_repository(repo)

    assert run_cli(config_path("region-b"), "refs", "restore", str(manifest_file), "--ignore-storage-id") == 0
    assert client.get_repository(repo).storage_id == ""
    assert snapshot(client, repo) == before
    assert read_all(client, repo, "main") == expected
    assert load_manifest(manifest_file).storage_id == "local-disk"  # the file is left as it was
