"""The code location loads without servers and without network, from the mirrors database or a given list."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest
import yaml

from lakefs_mirror_dagster.mirrors import MirrorState, MirrorStore
from lakefs_mirror_dagster.orchestration.definitions import defs, lakefs_mirror_definitions
from lakefs_mirror_dagster.orchestration.mirroring import MANAGER_SENSOR_NAME, commit_sensor_name
from lakefs_mirror_dagster.orchestration.reload import RELOAD_URL_ENV, request_reload


def _write_config(tmp_path: Path) -> tuple[Path, str]:
    """A region config whose lakeFS endpoints are unreachable, with a SQLite mirrors database."""
    db = tmp_path / "mirrors.db"
    config = {
        "region": "here",
        "organization_id": "org",
        "regional_endpoint": "http://127.0.0.1:9",
        "dst_endpoints": {"there": "http://127.0.0.1:9"},
        "mirrors_database": {"type": "sqlite", "sqlite": {"path": str(db)}},
        "blockstore": {"type": "local", "local": {"path": str(tmp_path / "data")}},
        "auth": {"encrypt": {"secret_key": "x"}},
        "lakefs": {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "secret-never-logged"},
        "commit_sensor": {"process_branches_duration": "7s"},
    }
    path = tmp_path / "replication.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, f"sqlite:///{db}"


def _add_mirror(url: str, name: str, state: MirrorState, organization: str = "org") -> None:
    with MirrorStore(url) as store:
        store.create_mirror(
            organization_id=organization,
            source_region="there",
            source_repository="source-repo",
            name=name,
            destination_region="here",
            storage_namespace=f"local://mirrors/{name}",
            state=state,
        )


def _names(d: dg.Definitions) -> tuple[set[str], set[str]]:
    return {k.path[1] for k in d.resolve_all_asset_keys()}, {s.name for s in d.sensors or []}


def test_without_a_config_only_the_manager_sensor_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKEFS_MIRROR_CONFIG", raising=False)
    monkeypatch.delenv("REPLICATION_CONFIG", raising=False)
    loaded = defs()
    dg.Definitions.validate_loadable(loaded)
    assert _names(loaded) == (set(), {MANAGER_SENSOR_NAME})


def test_active_mirrors_load_from_the_database_with_the_network_blocked(tmp_path: Path) -> None:
    path, url = _write_config(tmp_path)
    _add_mirror(url, "mirror-one", MirrorState.ACTIVE)
    _add_mirror(url, "mirror-pending", MirrorState.PENDING)
    script = textwrap.dedent(
        """
        import json, socket, sys
        def refuse(*args, **kwargs):
            raise AssertionError(f"network access during load: {args}")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        import dagster as dg
        from lakefs_mirror_dagster.orchestration.definitions import defs
        loaded = defs()
        dg.Definitions.validate_loadable(loaded)
        sensors = {s.name: s.minimum_interval_seconds for s in loaded.sensors}
        print(json.dumps({"assets": [k.path for k in loaded.resolve_all_asset_keys()], "sensors": sensors}))
        """
    )
    env = {"LAKEFS_MIRROR_CONFIG": str(path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # Only the active mirror gets its assets and a commit sensor, at the configured interval.
    assert sorted(out["assets"]) == [
        ["lakefs_mirror", "mirror-one", "branch_heads"],
        ["lakefs_mirror", "mirror-one", "source"],
        ["lakefs_mirror", "mirror-one", "tags"],
    ]
    assert out["sensors"] == {commit_sensor_name("mirror-one"): 7, MANAGER_SENSOR_NAME: 20}
    assert "secret-never-logged" not in done.stdout + done.stderr


def test_the_code_location_logs_in_the_configured_format(tmp_path: Path) -> None:
    """The code server applies ``logging``: its record about a mirror it cannot load is a JSON line naming it."""
    path, url = _write_config(tmp_path)
    config = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**config, "logging": {"level": "WARN", "format": "json"}}))
    with MirrorStore(url) as store:
        store.create_mirror(
            organization_id="org",
            source_region="there",
            source_repository="source-repo",
            name="mirror-storeless",
            destination_region="here",
            storage_namespace="local://mirrors/mirror-storeless",
            storage_id="gone",
            state=MirrorState.ACTIVE,
        )
    script = "from lakefs_mirror_dagster.orchestration.definitions import defs; defs()"
    checkout = str(Path(__file__).resolve().parents[2])
    env = {"LAKEFS_MIRROR_CONFIG": str(path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": checkout}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    ours = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [record] = [r for r in ours if r.get("mirror") == "mirror-storeless"]
    assert (record["level"], record["logger"]) == ("WARNING", "lakefs_mirror_dagster.orchestration.definitions")
    assert (record["region"], record["repository"]) == ("here", "source-repo")
    assert "store 'gone' of mirror mirror-storeless" in record["message"]


def test_a_missing_config_is_reported_by_the_manager_sensor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEFS_MIRROR_CONFIG", "/nonexistent/replication.yaml")
    loaded = defs()
    assert _names(loaded) == (set(), {MANAGER_SENSOR_NAME})
    sensor = loaded.resolve_sensor_def(MANAGER_SENSOR_NAME)
    with (
        dg.instance_for_test() as instance,
        dg.build_sensor_context(instance=instance, resources=loaded.resources) as context,
        pytest.raises(Exception, match=r"replication config /nonexistent/replication.yaml does not exist"),
    ):
        sensor(context)


def test_without_a_webserver_url_the_manager_asks_an_operator_to_reload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RELOAD_URL_ENV, raising=False)
    answer = request_reload("lakefs_mirror")
    assert "reload it from the UI" in answer and RELOAD_URL_ENV in answer


def test_a_mirror_list_given_to_the_factory_is_built_without_reading_the_database(tmp_path: Path) -> None:
    """What the Component does with its state: the mirrors it was given, none read from the database."""
    path, url = _write_config(tmp_path)
    _add_mirror(url, "in-the-database", MirrorState.ACTIVE)
    built = lakefs_mirror_definitions(config_path=str(path), mirrors=["abc", "def-mirror"])
    assets, sensors = _names(built)
    assert assets == {"abc", "def-mirror"}
    assert sensors == {commit_sensor_name("abc"), commit_sensor_name("def-mirror"), MANAGER_SENSOR_NAME}


@pytest.mark.integration
def test_a_code_location_loads_and_manages_only_its_organisations_mirrors(
    tmp_path: Path, postgres_url: str, unique_name: Callable[[str], str]
) -> None:
    """Two organisations share one PostgreSQL mirrors database: each region's Dagster sees its own mirrors only,
    and its manager sensor finds the loaded set complete (no reload asked for ever after)."""
    path, _ = _write_config(tmp_path)
    mine, theirs = unique_name("org-mine"), unique_name("org-theirs")
    config = yaml.safe_load(path.read_text())
    config.update(
        organization_id=mine, mirrors_database={"type": "postgres", "postgres": {"connection_string": postgres_url}}
    )
    path.write_text(yaml.safe_dump(config))
    ours, another = unique_name("ours"), unique_name("another-orgs")
    _add_mirror(postgres_url, ours, MirrorState.ACTIVE, organization=mine)
    _add_mirror(postgres_url, another, MirrorState.ACTIVE, organization=theirs)

    built = lakefs_mirror_definitions(config_path=str(path))
    assert _names(built)[0] == {ours}
    sensor = built.resolve_sensor_def(MANAGER_SENSOR_NAME)
    with (
        dg.instance_for_test() as instance,
        dg.build_sensor_context(instance=instance, resources=built.resources) as context,
    ):
        result = sensor(context)
    assert isinstance(result, dg.SensorResult) and result.skip_reason is not None
    assert result.skip_reason.skip_message == "1 active mirror(s)"  # no reload, no error
