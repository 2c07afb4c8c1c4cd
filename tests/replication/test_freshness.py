"""Freshness for cron and monitoring: ``lakefs-mirror status --fail-if-lag SECONDS`` exits 1, naming the branch,
when a mirror branch is further behind its source head than that, and 0 while every branch is in sync."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.cli import ExitCode
from tests.cli_process import run_cli

from .conftest import content, rot_at_source

pytestmark = pytest.mark.integration


def _status(config: Path, tmp_path: Path, *extra: str) -> tuple[int, dict[str, dict], list[str]]:
    done = run_cli("--config", str(config), "status", "--json", "--recent", "0", *extra, cwd=tmp_path)
    branches = {b["branch"]: b for m in json.loads(done.stdout) for b in m["branches"]}
    return done.returncode, branches, done.stderr.splitlines()


def test_status_fails_only_when_a_branch_is_further_behind_than_allowed(
    lakefs_env: Environment, isolated_regions, unique_name, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_path, service = isolated_regions
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # status reads promotions from a Dagster instance
    (tmp_path / "dagster.yaml").write_text("")
    src_svc, dst_svc = service("region-a"), service("region-b")
    src = src_svc.client("region-a")
    repo = unique_name("fresh")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "data/a.bin", content("a", 300))
    src.commit(repo, "main", "first")
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    [synced] = dst_svc.sync(name=mirror.name)
    assert synced.ok, synced.to_json()

    code, branches, stderr = _status(config_path("region-b"), tmp_path, "--fail-if-lag", "0")
    assert code == 0, stderr
    assert branches["main"]["in_sync"] and branches["main"]["behind_seconds"] == 0
    # With the Dagster instance read too (its event log, empty here, gives the promotions): the same verdict.
    done = run_cli("--config", str(config_path("region-b")), "status", "--fail-if-lag", "0", cwd=tmp_path)
    assert done.returncode == 0 and "no Dagster instance" not in done.stderr, done.stderr

    # Where cron runs it there may be no Dagster instance: the lag is still judged, the promotions are left out.
    monkeypatch.delenv("DAGSTER_HOME")
    done = run_cli("--config", str(config_path("region-b")), "status", "--fail-if-lag", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"mirror {mirror.name}" in done.stdout and "Traceback" not in done.stderr
    assert "no Dagster instance ($DAGSTER_HOME is not set): recent promotions are not shown" in done.stderr
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))

    # A new source commit whose object rotted at rest in the source store: the branch is blocked behind it.
    src.upload_object(repo, "main", "data/rot.bin", content("rot", 2000))
    behind = src.commit(repo, "main", "an object that rots").id
    rot_at_source(lakefs_env, src, repo, "main", "data/rot.bin", offset=100)
    [blocked] = dst_svc.sync(name=mirror.name)
    assert not blocked.ok

    code, branches, stderr = _status(config_path("region-b"), tmp_path, "--fail-if-lag", "3600")
    assert code == 0, stderr  # behind, but by seconds, not an hour
    main = branches["main"]
    assert not main["in_sync"] and main["source_commit_id"] == behind and 0 < main["behind_seconds"] < 600

    code, _, stderr = _status(config_path("region-b"), tmp_path, "--fail-if-lag", "0")
    assert code == ExitCode.STALE == 5
    with_dagster = run_cli("--config", str(config_path("region-b")), "status", "--fail-if-lag", "0", cwd=tmp_path)
    assert with_dagster.returncode == ExitCode.STALE and "Traceback" not in with_dagster.stderr
    monkeypatch.delenv("DAGSTER_HOME")
    without = run_cli("--config", str(config_path("region-b")), "status", "--fail-if-lag", "0", cwd=tmp_path)
    assert without.returncode == ExitCode.STALE and "no Dagster instance" in without.stderr
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    [line] = stderr
    assert line.startswith("lakefs-mirror: stale: ") and f"{mirror.name} branch main" in line and behind in line

    code, _, stderr = _status(config_path("region-b"), tmp_path)  # without the flag: a report, never a failure
    assert code == 0 and stderr == []

    # Without recent moves to show, status reads only the mirrors database: it never imports Dagster (seconds).
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    done = run_cli("--config", str(config_path("region-b")), "status", "--recent", "0", cwd=tmp_path)
    assert done.returncode == 0 and f"mirror {mirror.name}" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "lakefs_mirror_dagster.region.status" in imported and "dagster" not in imported
