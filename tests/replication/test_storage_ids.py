"""Stores are declared once and named by id: listing them (CLI and API), and refusing to start when a store
that a mirror still uses was removed from the config."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from lakefs_mirror_dagster.config import ConfigError, load_config
from lakefs_mirror_dagster.definitions import discover_mirrors
from lakefs_mirror_dagster.devenv import Environment
from lakefs_mirror_dagster.mirrors import MirrorState
from lakefs_mirror_dagster.replication import ReplicationService

pytestmark = pytest.mark.integration


def _multi_store_config(base: Path, tmp_path: Path, *, with_archive: bool) -> Path:
    """Region-b's config with ``blockstores``: its lakeFS store (backward compatible) and, optionally, an archive."""
    raw = yaml.safe_load(base.read_text())
    store = raw.pop("blockstore")
    stores = [{"id": "main-store", "description": "region-b's lakeFS store", "backward_compatible": True, **store}]
    if with_archive:
        archive = {"type": "local", "local": {"path": str(tmp_path / "archive")}}
        stores.append({"id": "archive", "description": "cold copies", **archive})
    raw["blockstores"] = {"stores": stores}
    raw["mirrors_database"] = {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}}
    path = tmp_path / f"replication-b-{'with' if with_archive else 'without'}-archive.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lakefs_mirror_dagster.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_storages_are_listed_with_ids_types_and_namespace_examples(
    config_path: Callable[[str], Path], tmp_path: Path
) -> None:
    path = _multi_store_config(config_path("region-b"), tmp_path, with_archive=True)
    done = _cli("--config", str(path), "storages", "list")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [(s["id"], s["type"], s["backward_compatible"]) for s in listed] == [
        ("main-store", "local", True),
        ("archive", "local", False),
    ]
    assert listed[1]["description"] == "cold copies"
    assert listed[1]["namespace_example"] == f"local://{tmp_path / 'archive'}/<repository>"
    # A single blockstore is the store with id "".
    single = json.loads(_cli("--config", str(config_path("region-a")), "storages", "list").stdout)
    assert [(s["id"], s["type"]) for s in single] == [("", "s3")]
    assert single[0]["namespace_example"].startswith("s3://")


def test_removing_a_store_a_mirror_uses_stops_start_up_naming_the_mirror(
    lakefs_env: Environment,
    config_path: Callable[[str], Path],
    client_for,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    with_archive = _multi_store_config(config_path("region-b"), tmp_path, with_archive=True)
    without = _multi_store_config(config_path("region-b"), tmp_path, with_archive=False)
    service = ReplicationService(load_config(with_archive, env={}))
    repo = unique_name("repo")
    client_for("region-a").create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    kept, archived = unique_name("kept"), unique_name("archived")
    for name, storage_id in ((kept, ""), (archived, "archive")):
        mirror = service.mirrors.create_mirror(
            organization_id="devenv",
            source_region="region-a",
            source_repository=repo,
            name=name,
            destination_region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(name),
            storage_id=storage_id,
        )
        service.mirrors.set_state(mirror.id, MirrorState.ACTIVE, "", None)
    service.check_stores()  # both stores configured: fine
    service.close()

    config = load_config(without, env={})
    with pytest.raises(ConfigError, match=rf"store 'archive' is used by mirror\(s\) {archived}\b") as raised:
        ReplicationService(config).check_stores()
    assert kept not in str(raised.value)
    with pytest.raises(ConfigError, match=archived):
        discover_mirrors(config)  # the Dagster code location does not load without the store

    for command in (["sync", "--once"], ["serve", "--listen", "127.0.0.1:9"]):
        done = _cli("--config", str(without), *command)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert f"store 'archive' is used by mirror(s) {archived}" in done.stderr
        assert "put the store back into blockstores.stores" in done.stderr
    # Nothing was created for either mirror while refusing.
    names = {r.id for r in client_for("region-b").list_repositories()}
    assert kept not in names and archived not in names
