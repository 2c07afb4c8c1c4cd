"""Bad manifests and taken names: clear errors, and nothing created in lakeFS or in storage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakefs_mirror_dagster.refs import ManifestError, RefsError, dump_repository

from .conftest import populate


def _repos(client) -> set[str]:
    return {r.id for r in client.list_repositories()}


@pytest.fixture
def dumped(client_for, unique_name, tmp_path) -> tuple[str, Path]:
    """A repository in region-b dumped (still existing) with its manifest file."""
    client = client_for("region-b")
    repo = unique_name("errs")
    client.create_repository(repo, f"local://{repo}")
    populate(client, repo)
    result = dump_repository(client, repo, tmp_path)
    assert result.path is not None
    return repo, result.path


def test_manifest_with_missing_fields_names_them_and_creates_nothing(
    client_for, config_path, run_cli, dumped, tmp_path
) -> None:
    _repo, path = dumped
    client = client_for("region-b")
    doc = json.loads(path.read_text())
    del doc["repository"]["storage_namespace"]
    del doc["refs"]["tags_meta_range_id"]
    doc["repository"]["name"] = "other-name-123"
    bad = tmp_path / "bad_manifest.json"
    bad.write_text(json.dumps(doc))
    before = _repos(client)
    with pytest.raises(ManifestError, match=r"repository\.storage_namespace.*refs\.tags_meta_range_id"):
        run_cli(config_path("region-b"), "refs", "restore", str(bad))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(ManifestError, match="not valid JSON"):
        run_cli(config_path("region-b"), "refs", "restore", str(garbage))
    with pytest.raises(ManifestError, match="no such file"):
        run_cli(config_path("region-b"), "refs", "restore", str(tmp_path / "missing.json"))
    assert _repos(client) == before


def test_taken_name_namespace_and_unknown_storage_id_are_refused(
    client_for, config_path, run_cli, dumped, tmp_path, unique_name
) -> None:
    repo, path = dumped
    client = client_for("region-b")
    before = _repos(client)
    with pytest.raises(RefsError, match=f"repository {repo} already exists"):
        run_cli(config_path("region-b"), "refs", "restore", str(path))

    # Same namespace under another name: lakeFS would accept it for a bare repository; we must not.
    doc = json.loads(path.read_text())
    doc["repository"]["name"] = unique_name("twin")
    twin = tmp_path / "twin_manifest.json"
    twin.write_text(json.dumps(doc))
    with pytest.raises(RefsError, match=f"already used by repository {repo}"):
        run_cli(config_path("region-b"), "refs", "restore", str(twin))
    # Inside another repository's namespace: refused too (a listing of the outer would reach its objects).
    inner = tmp_path / "inner_manifest.json"
    inner.write_text(
        json.dumps(
            {
                **doc,
                "repository": {
                    **doc["repository"],
                    "storage_namespace": (doc["repository"]["storage_namespace"].rstrip("/") + "/inner"),
                },
            }
        )
    )
    with pytest.raises(RefsError, match=f"lies inside .* of repository {repo}"):
        run_cli(config_path("region-b"), "refs", "restore", str(inner))

    # Open-source lakeFS knows only storage id "".
    with pytest.raises(RefsError, match=r"storage id 'minio-a' is unknown.*--ignore-storage-id"):
        run_cli(
            config_path("region-b"),
            "refs",
            "restore",
            str(twin),
            "--storage-id",
            "minio-a",
            "--to-namespace",
            f"local://{doc['repository']['name']}",
        )

    # Several manifests: a bad second one stops the first from being restored too.
    other = json.loads(path.read_text())
    other["repository"]["name"] = unique_name("first")
    other["repository"]["storage_namespace"] = f"local://{other['repository']['name']}"
    first = tmp_path / "first_manifest.json"
    first.write_text(json.dumps(other))
    with pytest.raises(RefsError, match="already exists"):
        run_cli(config_path("region-b"), "refs", "restore", str(first), str(path))
    assert _repos(client) == before


def test_restore_without_the_dump_files_rolls_back(client_for, config_path, run_cli, dumped, tmp_path, unique_name):
    _repo, path = dumped
    client = client_for("region-b")
    doc = json.loads(path.read_text())
    doc["repository"]["name"] = unique_name("nodata")
    doc["repository"]["storage_namespace"] = f"local://{doc['repository']['name']}"  # empty: no _lakefs/
    nodata = tmp_path / "nodata_manifest.json"
    nodata.write_text(json.dumps(doc))
    before = _repos(client)
    with pytest.raises(RefsError, match=r"metarange files are missing from .*_lakefs/"):
        run_cli(config_path("region-b"), "refs", "restore", str(nodata))
    assert _repos(client) == before


def test_copy_data_refuses_a_non_empty_target_and_copies_nothing(
    lakefs_env, client_for, migration_config, run_cli, dumped, tmp_path, unique_name
) -> None:
    repo, path = dumped
    client = client_for("region-b")
    doc = json.loads(path.read_text())
    doc["repository"]["name"] = unique_name("copy")
    renamed = tmp_path / "renamed_manifest.json"
    renamed.write_text(json.dumps(doc))
    target_root = Path(lakefs_env.region("region-b").blockstore["local"]["path"])
    occupied = target_root / f"{repo}-occupied"
    occupied.mkdir()
    (occupied / "someone-elses.txt").write_text("x")
    before = _repos(client)
    with pytest.raises(RefsError, match="already holds objects"):
        run_cli(
            migration_config,
            "refs",
            "restore",
            str(renamed),
            "--to-namespace",
            f"local://{repo}-occupied",
            "--copy-data",
        )
    assert sorted(p.name for p in occupied.rglob("*")) == ["someone-elses.txt"]
    with pytest.raises(RefsError, match="--copy-data needs --to-namespace"):
        run_cli(migration_config, "refs", "restore", str(renamed), "--copy-data")
    assert _repos(client) == before
