"""The wheel as a user installs it: built from the sdist, repaired to a manylinux tag, installed with no C
compiler on PATH and no extras, then run: ``--version``, the C loops, the Dagster definitions, and a
``sync --once`` that converges a mirror between two of the session's lakeFS regions."""

from __future__ import annotations

import json
import tarfile
import zipfile
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService

from .wheel import run_in_venv

pytestmark = pytest.mark.integration

#: Distributions only an extra brings; an install with none must have none of them.
EXTRAS_ONLY = (
    "google-cloud-storage",
    "azure-storage-blob",
    "pyspark",
    "dagster-pyspark",
    "dagster-webserver",
    "fastapi",
    "uvicorn",
    "psycopg",
    "httpx",
)


def _ok(done: object) -> None:
    import subprocess

    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 0, f"{done.args} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"


def test_the_wheel_is_manylinux_and_carries_the_compiled_c_loops(wheel: Path) -> None:
    assert "manylinux" in wheel.name, wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if n.startswith("lakefs_mirror_dagster/graveler/_native") and n.endswith(".so")], names
    assert "lakefs_mirror_dagster/py.typed" in names and "lakefs_mirror_dagster/config/example.yaml" in names
    assert not [n for n in names if n.startswith(("tests/", "lakefs_mirror_devenv/"))], "test or devenv code shipped"
    # The demo imports the dev distribution: it lives there, so the two distributions do not depend on each other.
    assert not [n for n in names if n.startswith("lakefs_mirror_dagster/demo/")], "the demo shipped in the wheel"
    assert "lakefs_mirror_dagster/cli/__init__.py" in names and "lakefs_mirror_dagster/cli.py" not in names
    (sdist,) = (wheel.parent.parent / "dist").glob("*.tar.gz")  # build_wheel's layout: the wheel came from it
    with tarfile.open(sdist) as archive:
        members = [m.split("/", 1)[1] for m in archive.getnames() if "/" in m]
    assert "lakefs_mirror_dagster/graveler/_native.c" in members and "pyproject.toml" in members
    assert not [m for m in members if m.startswith("tests/")], "the sdist holds part of the test suite"


def test_installed_without_a_compiler_it_runs_with_the_c_loops(
    core_venv: Path, no_compiler_env: dict[str, str]
) -> None:
    done = run_in_venv(core_venv, "lakefs-mirror", "--version", env=no_compiler_env)
    _ok(done)
    assert done.stdout.strip() == f"lakefs-mirror {version('lakefs-mirror-dagster')}"
    probe = (
        "import lakefs_mirror_dagster.graveler._native as n, lakefs_mirror_dagster.graveler.sstable as s;"
        "print(n.__file__); print(s._native_read_blocks is not None)"
    )
    done = run_in_venv(core_venv, "python", "-c", probe, env=no_compiler_env)
    _ok(done)
    native_file, in_use = done.stdout.split()
    assert native_file.startswith(str(core_venv.parent)), f"not the installed extension: {native_file}"
    assert in_use == "True", "graveler fell back to its Python loops"


def test_no_extras_brings_none_of_theirs_and_still_loads(core_venv: Path, no_compiler_env: dict[str, str]) -> None:
    done = run_in_venv(core_venv, "python", "-m", "pip", "list", "--format=json", env=no_compiler_env)
    _ok(done)
    installed = {d["name"].lower() for d in json.loads(done.stdout)}
    assert not installed & set(EXTRAS_ONLY), sorted(installed & set(EXTRAS_ONLY))
    loads = (
        "import sys, dagster as dg, lakefs_mirror_dagster, lakefs_mirror_dagster.cli,"
        " lakefs_mirror_dagster.orchestration.definitions as d;"
        "dg.Definitions.validate_loadable(d.defs());"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'google', 'azure', 'fastapi', 'uvicorn', 'pyspark',"
        " 'psycopg', 'httpx'}))"
    )
    done = run_in_venv(core_venv, "python", "-c", loads, env=no_compiler_env)
    _ok(done)
    assert done.stdout.strip() == "[]", done.stdout


def test_features_of_missing_extras_name_the_extra(
    core_venv: Path, no_compiler_env: dict[str, str], tmp_path: Path
) -> None:
    """Truly uninstalled here (the unit tests simulate it): the error says what to pip install."""
    for extra, store in (
        ("gcs", {"type": "gs", "gs": {"endpoint": "http://127.0.0.1:9"}}),
        ("azure", {"type": "azure", "azure": {"storage_account": "a", "storage_access_key": "a2V5"}}),
    ):
        build = (
            "from lakefs_mirror_dagster.errors import MissingExtraError;"
            "from lakefs_mirror_dagster.storage import build_blockstore\n"
            f"try: build_blockstore({store!r})\n"
            "except MissingExtraError as exc: print(exc)"
        )
        done = run_in_venv(core_venv, "python", "-c", build, env=no_compiler_env)
        _ok(done)
        assert f"pip install 'lakefs-mirror-dagster[{extra}]'" in done.stdout, done.stdout
    done = run_in_venv(
        core_venv, "lakefs-mirror", "dev", "openapi", str(tmp_path / "openapi.json"), env=no_compiler_env
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "pip install 'lakefs-mirror-dagster[service]'" in done.stderr and "Traceback" not in done.stderr


def test_sync_once_from_the_installed_wheel_converges_a_mirror(
    core_venv: Path,
    no_compiler_env: dict[str, str],
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    config_path, service_for = isolated_regions
    src, dst = client_for("region-a"), client_for("region-b")
    repo, name = unique_name("wheel"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    for key in ("a/one", "a/two", "b/three"):
        src.upload_object(repo, "main", key, key.encode() * 100)
    head = src.commit(repo, "main", "three objects").id
    service_for("region-a").create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    env = dict(no_compiler_env, DAGSTER_HOME=str(tmp_path))
    done = run_in_venv(
        core_venv,
        "lakefs-mirror",
        "--config",
        str(config_path("region-b")),
        "sync",
        "--once",
        "--mirror",
        name,
        env=env,
    )
    _ok(done)
    assert {b.id: b.commit_id for b in dst.list_branches(name)} == {"main": head}
    assert dst.get_object(name, "main", "b/three") == b"b/three" * 100

    # The code location, loaded from the installed package by Dagster's own CLI, with this mirror's assets.
    done = run_in_venv(
        core_venv,
        "dagster",
        "definitions",
        "validate",
        "-m",
        "lakefs_mirror_dagster.orchestration.definitions",
        env=dict(env, LAKEFS_MIRROR_CONFIG=str(config_path("region-b"))),
    )
    _ok(done)
