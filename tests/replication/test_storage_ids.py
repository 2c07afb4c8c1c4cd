"""Stores are declared once and named by id: listing them (CLI and API), and a mirror whose store was removed
from the config failing alone, with the reason, while the region serves and syncs the others."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.mirrors import MirrorState
from lakefs_mirror_dagster.orchestration.definitions import discover_mirrors
from lakefs_mirror_dagster.region import ReplicationService

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
    done = _cli("--config", str(path), "storages", "list", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [(s["id"], s["type"], s["backward_compatible"]) for s in listed] == [
        ("main-store", "local", True),
        ("archive", "local", False),
    ]
    assert listed[1]["description"] == "cold copies"
    assert listed[1]["namespace_example"] == f"local://{tmp_path / 'archive'}/<repository>"
    # A single blockstore is the store with id "".
    single = json.loads(_cli("--config", str(config_path("region-a")), "storages", "list", "--json").stdout)
    assert [(s["id"], s["type"]) for s in single] == [("", "s3")]
    assert single[0]["namespace_example"].startswith("s3://")
    # For people, without --json (the option may also come before the subcommand): a table, a row per store.
    table = _cli("--config", str(path), "storages", "list").stdout.splitlines()
    assert table[0].split() == ["ID", "TYPE", "DESCRIPTION", "NAMESPACE", "EXAMPLE"]
    assert table[2].split()[:4] == ["archive", "local", "cold", "copies"] and len(table) == 3


def test_a_mirror_whose_store_was_removed_fails_alone_and_the_region_goes_on(
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
    assert service.fail_storeless_mirrors() == {}  # both stores configured: nothing to report
    service.close()

    config = load_config(without, env={})
    assert discover_mirrors(config) == [kept], "the Dagster code location must load, without that mirror"

    done = _cli("--config", str(without), "sync", "--once", "--json")
    assert done.returncode == 1, (done.stdout, done.stderr)
    results = {r["mirror"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert results[kept]["ok"], results[kept]
    assert "store 'archive'" in results[archived]["error"] and "blockstores.stores" in results[archived]["error"]
    names = {r.id for r in client_for("region-b").list_repositories()}
    assert kept in names and archived not in names
    after = ReplicationService(config)
    try:
        failed = after.mirrors.get_by_name("region-b", archived)
        assert failed.state == MirrorState.FAILED and "store 'archive'" in failed.message, failed
    finally:
        after.close()

    # serve starts and answers, too (the failed mirror's state says why; the API shows it).
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(without), "serve", "--listen",
         f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert _answers(f"http://127.0.0.1:{port}/service/replication/v1/config/storages", timeout_s=60), (
            server.poll(),
            server.stderr.read() if server.poll() is not None else "",  # type: ignore[union-attr]
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


def _answers(url: str, *, timeout_s: float) -> bool:
    """Whether an HTTP server answers ``url`` (any status) within ``timeout_s``: bounded polling."""
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s * 4)):
        try:
            urllib.request.urlopen(url, timeout=2)
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.25)
    return False
