"""The Dagster job: dump -> copy -> restore of several repositories from region-a (MinIO) to region-b (local)."""

from __future__ import annotations

from lakefs_mirror_dagster.orchestration.refs_migration import refs_migration_job
from lakefs_mirror_dagster.orchestration.resources import ReplicationResource

from .conftest import populate, read_all, snapshot


def _run(config_path, run_config):
    return refs_migration_job.execute_in_process(
        run_config={"ops": {"plan_refs_migration": {"config": run_config}}},
        resources={"lakefs_mirror": ReplicationResource(config_path=str(config_path))},
        raise_on_error=False,
    )


def test_job_moves_repositories_to_another_region_and_store(
    lakefs_env, client_for, migration_config, unique_name, tmp_path
) -> None:
    src, dst = client_for("region-a"), client_for("region-b")
    repos = [unique_name("job"), unique_name("job")]
    expected, before = {}, {}
    for repo in repos:
        src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
        expected[repo] = populate(src, repo)
        before[repo] = snapshot(src, repo)

    result = _run(
        migration_config,
        {
            "repositories": repos,
            "target_namespace_root": "local://migrated",
            "source_region": "region-a",
            "target_region": "region-b",
            "manifest_dir": str(tmp_path),
        },
    )
    assert result.success
    for repo in repos:
        assert dst.get_repository(repo).storage_namespace == f"local://migrated/{repo}"
        assert snapshot(dst, repo) == before[repo]
        assert read_all(dst, repo, "main") == expected[repo]
        assert (tmp_path / f"{repo}_manifest.json").exists()
        assert src.get_repository(repo).id == repo  # another region: the source stays

    # Run again: every repository now exists at the target, so the plan fails before touching anything.
    again = _run(
        migration_config,
        {
            "repositories": repos,
            "target_namespace_root": "local://migrated-2",
            "source_region": "region-a",
            "target_region": "region-b",
            "manifest_dir": str(tmp_path / "again"),
        },
    )
    assert not again.success
    failure = next(e for e in again.all_events if e.is_step_failure)
    assert "already exists" in failure.step_failure_data.error.message
    assert not (tmp_path / "again").exists()


def test_job_migrates_within_one_region_by_replacing_the_repository(
    client_for, migration_config, unique_name, tmp_path
) -> None:
    client = client_for("region-b")
    repo = unique_name("inplace")
    client.create_repository(repo, f"local://{repo}")
    expected = populate(client, repo)
    before = snapshot(client, repo)
    result = _run(
        migration_config,
        {
            "repositories": [repo],
            "target_namespace_root": "local://moved-here",
            "copy_data": True,
            "manifest_dir": str(tmp_path),
        },
    )
    assert result.success
    assert client.get_repository(repo).storage_namespace == f"local://moved-here/{repo}"
    assert snapshot(client, repo) == before
    assert read_all(client, repo, "main") == expected
