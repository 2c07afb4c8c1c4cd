"""``environment_up(lakefs_on_postgres=...)``: a region's lakeFS on the environment's PostgreSQL, as production runs
it, its replication config with ``refstore_database``, and a sync that writes its commit records there.

The history is made and both logs are read with ``lakefs_sdk`` (lakeFS's generated client). That the records came
through the refstore and not through lakeFS's ``CreateCommitRecord`` shows in the records themselves: the API takes
whole seconds, the refstore keeps the source's nanoseconds."""

from __future__ import annotations

from pathlib import Path

import lakefs_sdk
import psycopg
import pytest
from lakefs_mirror_devenv import LakeFSRegion, RegionSpec, environment_up
from lakefs_mirror_devenv.environment import stop_environment
from lakefs_mirror_devenv.processes import pid_alive

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.graveler import decode_commit_data
from lakefs_mirror_dagster.region import ReplicationService

pytestmark = pytest.mark.integration

REGIONS = (RegionSpec("src"), RegionSpec("dst"))


def _sdk(region: LakeFSRegion) -> lakefs_sdk.ApiClient:
    conf = lakefs_sdk.Configuration(
        host=region.api_url, username=region.access_key_id, password=region.secret_access_key
    )
    return lakefs_sdk.ApiClient(conf)


def _log(region: LakeFSRegion, repo: str) -> list[lakefs_sdk.Commit]:
    return list(lakefs_sdk.RefsApi(_sdk(region)).log_commits(repo, "main", amount=100).results)


def test_a_region_on_postgres_writes_commit_records_through_its_refstore_database(tmp_path: Path) -> None:
    env = environment_up(tmp_path / "env", REGIONS, lakefs_on_postgres=("dst",))
    try:
        config = load_config(Path(env.state_dir) / "replication-dst.yaml", env={})
        assert config.refstore_database is not None and config.refstore_database.type == "postgres"
        assert load_config(Path(env.state_dir) / "replication-src.yaml", env={}).refstore_database is None
        assert config.mirrors_database.type == "sqlite"  # PostgreSQL is the mirrors database only when asked
        src, dst = env.region("src"), env.region("dst")
        api = _sdk(src)
        lakefs_sdk.RepositoriesApi(api).create_repository(
            lakefs_sdk.RepositoryCreation(name="three", storage_namespace=src.namespace_for("three"))
        )
        for i in range(3):
            path = tmp_path / f"{i}.txt"
            path.write_text(f"commit {i}\n")
            lakefs_sdk.ObjectsApi(api).upload_object("three", "main", path.name, content=str(path))
            lakefs_sdk.CommitsApi(api).commit("three", "main", lakefs_sdk.CommitCreation(message=f"commit {i}"))

        service = ReplicationService(config)
        try:
            service.create_mirror(
                source_repository="three",
                name="three-mirror",
                region="dst",
                storage_namespace=dst.namespace_for("three-mirror"),
                source_region="src",
            )
            [result] = service.sync(name="three-mirror")
            assert result.ok, result.to_json()
            assert service.log_order == "exact"
        finally:
            service.close()

        source_log, mirror_log = _log(src, "three"), _log(dst, "three-mirror")
        assert len(source_log) == 4  # and lakeFS's first commit
        assert mirror_log == source_log
        connection = config.refstore_database.postgres.connection_string.reveal()
        with psycopg.connect(connection) as session:
            for commit in source_log:
                [(value,)] = session.execute("SELECT value FROM kv WHERE key = %s", (f"commits/{commit.id}".encode(),))
                record = decode_commit_data(bytes(value))
                assert record.creation_date_seconds == commit.creation_date
                assert record.creation_date_nanos != 0, f"{commit.id} has whole seconds: written through the API"
    finally:
        stop_environment(env)
    assert not any(pid_alive(p) for p in env.pids())
