"""A mirror created at run time appears in Dagster and replicates, with no Dagster process restarted.

The set-up is how ``dagster code-server start`` deployments run: a real code server process (a proxy around
the subprocess that loads the definitions), a webserver in front of it (the manager sensor asks it to reload the
location, through Dagster's public GraphQL client), and the daemon's own sensor loop (``execute_sensor_iteration``)
driving the code server over gRPC, with the default run launcher starting each run in its own process. The only
thing this test does that the daemon also does on its own is ``refresh_workspace()``, every 60 seconds there.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import GrpcServerTarget
from dagster._daemon.sensor import execute_sensor_iteration
from dagster._grpc.client import DagsterGrpcClient
from lakefs_mirror_devenv.demo.converge import run_until_converged
from lakefs_mirror_devenv.processes import wait_http_ok

from lakefs_mirror_dagster.mirrors import MirrorState
from lakefs_mirror_dagster.orchestration.history import mirror_history
from lakefs_mirror_dagster.orchestration.mirroring import MANAGER_SENSOR_NAME, commit_sensor_name
from lakefs_mirror_dagster.orchestration.reload import RELOAD_URL_ENV
from tests.replication.conftest import assert_mirror_equals_source, content

LOCATION = "lakefs_mirror"
log = logging.getLogger(__name__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def daemon_instance() -> Iterator[dg.DagsterInstance]:
    # Runs launch as soon as they are submitted (no queue daemon in this test).
    overrides = {"run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}}
    with dg.instance_for_test(overrides=overrides) as instance:
        yield instance


@pytest.fixture
def code_server(daemon_instance: dg.DagsterInstance, isolated_regions, tmp_path) -> Iterator[int]:
    """A ``dagster code-server start`` server, and a webserver in front of it whose URL the manager sensor is given
    (``LAKEFS_MIRROR_DAGSTER_URL``): the way a deployment lets the sensor ask for a reload."""
    config_path, _ = isolated_regions
    port, web_port = _free_port(), _free_port()
    url = f"http://127.0.0.1:{web_port}"
    env = {
        **os.environ,
        "LAKEFS_MIRROR_CONFIG": str(config_path("region-b")),
        "PYSPARK_PYTHON": sys.executable,
        RELOAD_URL_ENV: url,
    }
    command = [
        sys.executable, "-m", "dagster", "code-server", "start",
        "--host", "127.0.0.1", "--port", str(port), "--location-name", LOCATION,
        "-m", "lakefs_mirror_dagster.orchestration.definitions", "-a", "defs",
    ]  # fmt: skip
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n      port: {port}\n      location_name: {LOCATION}\n"
    )
    home = tmp_path / "webserver_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    webserver = [
        str(Path(sys.executable).parent / "dagster-webserver"),
        "-h", "127.0.0.1", "-p", str(web_port), "-w", str(workspace),
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    web: subprocess.Popen[bytes] | None = None
    try:
        client = DagsterGrpcClient(port=port, host="127.0.0.1")
        _wait("the code server", lambda: _answers(client, process), seconds=60, step=0.5)
        web_env = {**os.environ, "DAGSTER_HOME": str(home)}
        web = subprocess.Popen(webserver, env=web_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http_ok(f"{url}/server_info", timeout_s=90, process=web)
        yield port
    finally:
        for proc in (web, process):
            if proc is None:
                continue
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _answers(client: DagsterGrpcClient, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"code server exited: {process.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
    try:
        client.ping("up")
        return True
    except Exception:
        return False


def _has_sensor(context: WorkspaceProcessContext, name: str) -> bool:
    location = context.create_request_context().get_code_location(LOCATION)
    return any(repo.has_sensor(name) for repo in location.get_repositories().values())


def _wait(what: str, condition: Callable[[], bool], *, seconds: float, step: float = 1.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")


def test_mirror_created_at_runtime_is_loaded_and_replicated_without_restart(
    lakefs_env, isolated_regions, unique_name, daemon_instance, code_server
) -> None:
    instance = daemon_instance
    _, service_for = isolated_regions
    workspace = WorkspaceProcessContext(
        instance, GrpcServerTarget(host="127.0.0.1", port=code_server, socket=None, location_name=LOCATION)
    )
    with workspace:
        assert _has_sensor(workspace, MANAGER_SENSOR_NAME)
        server_id = DagsterGrpcClient(port=code_server, host="127.0.0.1").get_server_id()

        # A mirror is created the way the API and the CLI create it: a record in the mirrors database.
        svc_a, svc_b = service_for("region-a"), service_for("region-b")
        src = svc_a.client("region-a")
        repo, name = unique_name("repo"), unique_name("mirror")
        src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
        src.upload_object(repo, "main", "a.csv", content("a.csv", 300))
        head = src.commit(repo, "main", "data").id
        svc_a.create_mirror(
            source_repository=repo,
            name=name,
            region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(name),
        )
        assert not _has_sensor(workspace, commit_sensor_name(name))

        # The daemon's sensor loop ticks the manager: it activates the mirror and asks for a reload.
        list(execute_sensor_iteration(workspace, log, None, None))
        mirror = next(svc_b.my_mirrors(name=name))
        assert mirror.state == MirrorState.ACTIVE, mirror.message
        client = DagsterGrpcClient(port=code_server, host="127.0.0.1")
        _wait("the code server to reload", lambda: client.get_server_id() != server_id, seconds=90)

        def refreshed() -> bool:
            workspace.refresh_workspace()  # the daemon does this every 60 s
            return _has_sensor(workspace, commit_sensor_name(name))

        _wait("the new mirror's commit sensor", refreshed, seconds=90, step=2.0)

        # The new commit sensor (running by default) requests a run; the run launcher starts it.
        def run_done() -> bool:
            list(execute_sensor_iteration(workspace, log, None, None))
            runs = instance.get_runs(dg.RunsFilter(tags={"lakefs_mirror/mirror": name}))
            return bool(runs) and all(r.is_finished for r in runs)

        _wait("the mirror run to finish", run_done, seconds=300, step=3.0)
        [run] = instance.get_runs(dg.RunsFilter(tags={"lakefs_mirror/mirror": name}))
        assert run.status == dg.DagsterRunStatus.SUCCESS, run.status
        assert run.tags.get("dagster/partition") == "main"
        assert_mirror_equals_source(src, repo, svc_b.client("region-b"), name)
        assert [p.mirror_commit_id for p in mirror_history(instance, name, "main")] == [head]


def test_run_until_converged_activates_and_mirrors_new_mirrors_in_process(
    lakefs_env, isolated_regions, unique_name, instance
) -> None:
    config_path, service_for = isolated_regions
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    src = svc_a.client("region-a")
    names = []
    for _ in range(2):
        repo, name = unique_name("repo"), unique_name("mirror")
        src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
        src.upload_object(repo, "main", "k", content(name, 10))
        src.commit(repo, "main", "one")
        src.create_branch(repo, "dev", "main")
        svc_a.create_mirror(
            source_repository=repo,
            name=name,
            region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(name),
        )
        names.append((repo, name))

    result = run_until_converged(instance, config_path=str(config_path("region-b")), max_rounds=5)
    assert result.converged and not result.failed
    assert sorted((r.mirror, r.branch) for r in result.runs) == sorted(
        (name, branch) for _, name in names for branch in ("dev", "main")
    )
    for repo, name in names:
        assert_mirror_equals_source(src, repo, svc_b.client("region-b"), name)
