"""``devenv up|status|down`` on a throw-away environment: healthy while up, nothing left after down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lakefs_mirror_devenv import DevenvError, parse_region_spec
from lakefs_mirror_devenv.processes import pid_alive

from lakefs_mirror_dagster.cli import main
from tests.cli_process import run_cli


def test_up_status_down_leaves_no_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "env"
    assert (
        main(["dev", "devenv", "up", "--state-dir", str(state), "--region", "one", "--region", "two=s3:m1", "--json"])
        == 0
    )
    described = json.loads(capsys.readouterr().out)
    assert set(described["regions"]) == {"one", "two"}
    assert described["regions"]["two"]["namespace_root"] == "s3://two"
    on_disk = json.loads((state / "environment.json").read_text())
    assert on_disk["regions"]["one"]["endpoint"] == described["regions"]["one"]["endpoint"]
    pids = [r["pid"] for r in described["regions"].values()] + [m["pid"] for m in described["minio"].values()]
    try:
        assert main(["dev", "devenv", "status", "--state-dir", str(state)]) == 0
        status = json.loads(capsys.readouterr().out)
        assert all(r["healthy"] for r in status["regions"].values())
        # A second `up` on a running environment refuses instead of starting duplicates.
        assert main(["dev", "devenv", "up", "--state-dir", str(state)]) == 2
        assert "already running" in capsys.readouterr().err
    finally:
        assert main(["dev", "devenv", "down", "--state-dir", str(state)]) == 0
    assert not any(pid_alive(p) for p in pids)
    assert main(["dev", "devenv", "status", "--state-dir", str(state)]) == 1


def test_bad_region_spec_is_a_clear_error() -> None:
    with pytest.raises(DevenvError, match="bad region spec"):
        parse_region_spec("x=ftp")


def test_region_name_that_cannot_be_a_bucket_is_refused_before_anything_starts(tmp_path: Path) -> None:
    state = tmp_path / "env"
    done = run_cli("dev", "devenv", "up", "--state-dir", str(state), "--region", "a=s3:m1", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lakefs-mirror: region 'a' on s3:m1") and "3-63 lowercase letters" in line
    assert not state.exists()  # no MinIO was started (it would have written its data there)


def test_up_with_dynamodb_gives_the_regions_a_dynamodb_mirrors_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lakefs_mirror_dagster.config import load_config
    from lakefs_mirror_dagster.mirrors import open_mirrors_database

    state = tmp_path / "env"
    assert main(["dev", "devenv", "up", "--state-dir", str(state), "--region", "solo", "--dynamodb", "--json"]) == 0
    dynamodb = json.loads(capsys.readouterr().out)["dynamodb"]
    try:
        assert dynamodb["endpoint"].startswith("http://127.0.0.1:") and pid_alive(dynamodb["pid"])
        config = load_config(state / "replication-solo.yaml", env={})
        assert config.mirrors_database.type == "dynamodb"
        assert config.mirrors_database.dynamodb.endpoint == dynamodb["endpoint"]
        with open_mirrors_database(config.mirrors_database) as store:  # the table is created on first use
            assert store.organization_ids() == []
            assert dynamodb["table_name"] in store.url
    finally:
        assert main(["dev", "devenv", "down", "--state-dir", str(state)]) == 0
    assert not pid_alive(dynamodb["pid"])


def test_up_refuses_two_mirrors_databases_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "env"
    assert main(["dev", "devenv", "up", "--state-dir", str(state), "--postgres", "--dynamodb"]) == 2
    assert "not both" in capsys.readouterr().err
    assert not state.exists()


def test_lakefs_on_postgres_of_no_region_is_refused_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    state = tmp_path / "env"
    done = run_cli("dev", "devenv", "up", "--state-dir", str(state), "--lakefs-on-postgres", "nope", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "lakefs-mirror: lakeFS on PostgreSQL: no region 'nope' (have ['region-a', 'region-b'])"
    ]
    assert not state.exists()
