"""``refs dump --all --rm`` on a lakeFS of its own (it removes every repository it dumps): read-only
repositories, such as mirrors, are left alone unless named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from lakefs_mirror_devenv.processes import stop_pid
from lakefs_mirror_devenv.servers import start_lakefs

from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.refs.manifest import load_manifest

pytestmark = pytest.mark.integration


def test_dump_all_with_rm_dumps_and_removes_only_writable_repositories(
    tmp_path: Path, run_cli: Callable[..., int], capsys: pytest.CaptureFixture[str]
) -> None:
    region = start_lakefs("region-solo", tmp_path / "lakefs")
    try:
        config = tmp_path / "replication-region-solo.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "region": "region-solo",
                    "organization_id": "devenv",
                    "regional_endpoint": region.endpoint,
                    "mirrors_database": {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}},
                    "blockstore": region.blockstore,
                    "auth": {"encrypt": {"secret_key": region.auth_secret_key}},
                    "lakefs": {"access_key_id": region.access_key_id, "secret_access_key": region.secret_access_key},
                }
            )
        )
        client = LakeFSClient(region.endpoint, region.access_key_id, region.secret_access_key)
        for repo in ("sales", "events"):
            client.create_repository(repo, region.namespace_for(repo))
            client.upload_object(repo, "main", "data/a.csv", repo.encode())
            client.commit(repo, "main", "first")
        client.create_repository("sales-mirror", region.namespace_for("sales-mirror"), read_only=True)

        out = tmp_path / "manifests"
        assert run_cli(config, "refs", "dump", "--all", "--rm", "--output-dir", str(out)) == 0
        printed = capsys.readouterr().out
        assert "skipped read-only repositories (mirrors; name them to dump): sales-mirror" in printed
        assert sorted(p.name for p in out.iterdir()) == ["events_manifest.json", "sales_manifest.json"]
        assert load_manifest(out / "sales_manifest.json").name == "sales"
        assert [r.id for r in client.list_repositories()] == ["sales-mirror"]

        # Named explicitly, a read-only repository is dumped (and kept without --rm).
        assert run_cli(config, "refs", "dump", "sales-mirror", "--output-dir", str(out)) == 0
        assert (out / "sales-mirror_manifest.json").exists()
        assert [r.id for r in client.list_repositories()] == ["sales-mirror"]
        client.close()
    finally:
        stop_pid(region.pid)
