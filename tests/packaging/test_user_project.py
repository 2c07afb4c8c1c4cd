"""A Dagster team adds mirroring to its own projects, from the wheel, as the README says.

Both projects live in a fresh venv holding only the wheel (no extras), ``dagster-dg-cli`` and ``boto3``; nothing of
this checkout is on their path. The first is a ``dg`` project: ``dg scaffold defs`` writes the Component's
``defs.yaml``, the team's own asset reads the mirror through lakeFS's S3 gateway with boto3 and waits downstream of
the mirror's branch heads, ``dg check defs`` passes, and under a real ``dagster-daemon`` the mirror converges and
the team's asset materializes. The second merges ``lakefs_mirror_definitions`` into ``Definitions`` of its own,
with its own resource called ``replication`` (the key the package once forced) and its own executor.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import dagster as dg
import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import start_process, stop_pid
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.orchestration.mirroring import reconcile_mirrors
from lakefs_mirror_dagster.region import ReplicationService
from tests.replication.conftest import assert_mirror_equals_source

from .wheel import make_venv

pytestmark = pytest.mark.integration

TIMEOUT_S = 420.0

DEFINITIONS_PY = """\
from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
"""

# The team's own asset: it reads the mirror (not the source) with boto3, after the mirror's main branch moved.
REPORT_PY = """\
import os

import boto3
import dagster as dg

MIRROR = os.environ["TEAM_MIRROR"]


@dg.asset(
    deps=[dg.AssetKey(["mirrors", MIRROR, "branch_heads"])],
    automation_condition=dg.AutomationCondition.eager(),
)
def mirrored_objects() -> dg.MaterializeResult:
    s3 = boto3.client(
        "s3",
        endpoint_url=os.environ["TEAM_MIRROR_GATEWAY"],
        aws_access_key_id=os.environ["TEAM_KEY_ID"],
        aws_secret_access_key=os.environ["TEAM_SECRET"],
        region_name="us-east-1",
    )
    listed = s3.list_objects_v2(Bucket=MIRROR, Prefix="main/")
    return dg.MaterializeResult(metadata={"objects": len(listed.get("Contents", []))})


automation = dg.AutomationConditionSensorDefinition(
    "team_automation",
    target=dg.AssetSelection.keys("mirrored_objects"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=5,
)
"""

PLAIN_DEFINITIONS_PY = """\
import os

import dagster as dg
from lakefs_mirror_dagster import lakefs_mirror_definitions


class Warehouse(dg.ConfigurableResource):
    dsn: str = "postgresql://warehouse"


@dg.asset
def team_table(replication: Warehouse) -> None: ...


defs = dg.Definitions.merge(
    lakefs_mirror_definitions(
        config_path=os.environ["TEAM_REPLICATION_CONFIG"],
        key_prefix=["lakefs", "eu"],
        group_name="mirrors_eu",
        resource_key="lakefs_eu",
        spark_resource_key="lakefs_eu_spark",
    ),
    dg.Definitions(assets=[team_table], resources={"replication": Warehouse()}, executor=dg.multiprocess_executor),
)
"""

PLAIN_RUN_PY = """\
import json, sys

import dagster as dg
from plainproj.definitions import defs

mirror = sys.argv[1]
key = dg.AssetKey(["lakefs", "eu", mirror, "branch_heads"])
with dg.DagsterInstance.get() as instance:
    instance.add_dynamic_partitions(f"lakefs_eu_{mirror.replace('-', '_')}_branches", ["main"])
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, partition_key="main", asset_selection=[key])
    graph = defs.resolve_asset_graph()
    groups = {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()}
    print(json.dumps({"success": result.success, "groups": groups, "executor": defs.executor.name}))
"""


def _run(argv: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 300) -> str:
    done = subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return done.stdout


def _project(root: Path, name: str) -> Path:
    (root / "src" / name / "defs").mkdir(parents=True)
    (root / "src" / name / "__init__.py").write_text("")
    (root / "src" / name / "defs" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [project]
            name = "{name}"
            version = "0.1.0"
            requires-python = ">=3.11"
            dependencies = ["lakefs-mirror-dagster", "boto3"]

            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"

            [tool.dg]
            directory_type = "project"

            [tool.dg.project]
            root_module = "{name}"
            code_location_target_module = "{name}.definitions"
            """
        )
    )
    return root


def _mirror(lakefs_env: Environment, service: Callable[[str], ReplicationService], repo: str, name: str) -> None:
    service("region-a").create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    assert name in reconcile_mirrors(service("region-b")).activated


def _wait(what: str, condition: Callable[[], bool], log: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(2.0)
    raise AssertionError(f"timed out after {TIMEOUT_S:.0f} s waiting for {what}; see {log}")


def test_user_projects_add_mirroring_from_the_wheel(
    wheel: Path,
    lakefs_env: Environment,
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    config_path, service = isolated_regions
    bin_dir = make_venv(tmp_path / "venv", wheel, extra_packages=["dagster-dg-cli", "boto3"])
    # The source is written by boto3 through region-a's S3 gateway, as a user's jobs write it.
    repo, name, other = unique_name("team"), unique_name("team-mirror"), unique_name("plain-mirror")
    src = service("region-a").client("region-a")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    gateway = lakefs_env.region("region-a").s3_gateway_client()
    for i in range(3):
        gateway.put_object(Bucket=repo, Key=f"main/tables/t/part-{i}.json", Body=json.dumps({"row": i}).encode())
    src.commit(repo, "main", "team data")
    _mirror(lakefs_env, service, repo, name)
    config = config_variant(
        config_path("region-b"), tmp_path / "region-b.yaml", commit_sensor={"process_branches_duration": "2s"}
    )
    mirror_region = lakefs_env.region("region-b")
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "TEAM_MIRROR": name,
        "TEAM_MIRROR_GATEWAY": mirror_region.endpoint,
        "TEAM_KEY_ID": mirror_region.access_key_id,
        "TEAM_SECRET": mirror_region.secret_access_key,
        "TEAM_REPLICATION_CONFIG": str(config),
        "PYTHONPATH": "",
    }
    (tmp_path / "dagster_home").mkdir()
    (tmp_path / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")

    # 1. A dg project with the Component, scaffolded by dg.
    team = _project(tmp_path / "teamproj", "teamproj")
    _run([str(bin_dir / "pip"), "install", "--quiet", "--no-deps", "-e", str(team)], cwd=team, env=env)
    listed = _run([str(bin_dir / "dg"), "list", "components", "--json"], cwd=team, env=env)
    assert "lakefs_mirror_dagster.components.LakeFSMirrorComponent" in listed
    scaffold = ["dg", "scaffold", "defs", "lakefs_mirror_dagster.components.LakeFSMirrorComponent", "mirrors"]
    _run([str(bin_dir / scaffold[0]), *scaffold[1:]], cwd=team, env=env)
    defs_yaml = team / "src" / "teamproj" / "defs" / "mirrors" / "defs.yaml"
    scaffolded = yaml.safe_load(defs_yaml.read_text())
    assert scaffolded["type"] == "lakefs_mirror_dagster.components.LakeFSMirrorComponent"
    scaffolded["attributes"] = {"config_path": str(config), "key_prefix": ["mirrors"], "group_name": "team_mirrors"}
    defs_yaml.write_text(yaml.safe_dump(scaffolded))
    (team / "src" / "teamproj" / "defs" / "report.py").write_text(REPORT_PY)
    (team / "src" / "teamproj" / "definitions.py").write_text(DEFINITIONS_PY)
    _run([str(bin_dir / "dg"), "check", "defs"], cwd=team, env=env)

    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        yaml.safe_dump(
            {"load_from": [{"python_module": {"module_name": "teamproj.definitions", "location_name": "teamproj",
                                              "executable_path": str(bin_dir / "python")}}]}
        )
    )  # fmt: skip
    log = tmp_path / "dagster-daemon.log"
    daemon = start_process([str(bin_dir / "dagster-daemon"), "run", "-w", str(workspace)], log_path=log, env=env)
    try:
        with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:

            def team_asset_done() -> bool:
                assert daemon.poll() is None, f"dagster-daemon exited; see {log}"
                found = instance.fetch_materializations(dg.AssetKey("mirrored_objects"), limit=1)
                return bool(found.records)

            _wait("the team's asset downstream of the mirror", team_asset_done, log)
            [record] = instance.fetch_materializations(dg.AssetKey("mirrored_objects"), limit=1).records
            event = record.asset_materialization
            assert event is not None and event.metadata["objects"].value == 3
            [branch] = instance.fetch_materializations(dg.AssetKey(["mirrors", name, "branch_heads"]), limit=5).records
            assert branch.asset_materialization is not None and branch.asset_materialization.partition == "main"
    finally:
        stop_pid(daemon.pid, timeout_s=30)
    assert_mirror_equals_source(src, repo, service("region-b").client("region-b"), name)

    # 2. Plain Definitions of a team's own, merged with the factory's: its resource keys and executor stay.
    _mirror(lakefs_env, service, repo, other)
    plain = _project(tmp_path / "plainproj", "plainproj")
    (plain / "src" / "plainproj" / "definitions.py").write_text(PLAIN_DEFINITIONS_PY)
    _run([str(bin_dir / "pip"), "install", "--quiet", "--no-deps", "-e", str(plain)], cwd=plain, env=env)
    _run([str(bin_dir / "dg"), "check", "defs"], cwd=plain, env=env)
    out = json.loads(_run([str(bin_dir / "python"), "-c", PLAIN_RUN_PY, other], cwd=plain, env=env).splitlines()[-1])
    assert out["success"] and out["executor"] == "multiprocess"
    assert out["groups"][f"lakefs/eu/{other}/branch_heads"] == "mirrors_eu"
    assert out["groups"]["team_table"] == "default"
    assert_mirror_equals_source(src, repo, service("region-b").client("region-b"), other)
