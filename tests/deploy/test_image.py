"""The image as the chart runs it, against the dev environment's regions: what `helm template` renders (the
ConfigMap's config file, the containers' arguments and environment, the secret's keys as variables) is handed to
the image's entrypoint through `buildah run` (chroot isolation, host network; `podman run` cannot run here).
`serve` runs in the source region (region-a), a mirror is created through its REST API, `sync --once` runs in the
destination region (region-c, on MinIO), and the mirror equals its source.

Building the image takes minutes on a fresh machine, so the default suite does not: `scripts/dev image` builds it
(cached), and this test skips, saying so, until it exists.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.lakefs import LakeFSClient
from tests.replication.conftest import assert_mirror_equals_source

from .chart import Rendered, render, split_secrets
from .image import Image, built_image

pytestmark = pytest.mark.integration

SECRET_NAME = "replication-secrets"
_WAIT_S = 120.0


@pytest.fixture(scope="module")
def image() -> Image:
    if shutil.which("buildah") is None:
        pytest.skip("buildah is not installed (apt-get install -y buildah mmdebstrap), so the image cannot run here")
    found = built_image()
    if found is None:
        pytest.skip("no image of this checkout: run `scripts/dev image` (a few minutes the first time) to build it")
    return found


@pytest.fixture
def containers(image: Image) -> Iterator[Callable[[], str]]:
    """``new()`` is a fresh working container of the image's OCI archive; all are removed at the end."""
    made: list[str] = []

    def new() -> str:
        done = _buildah("from", "--quiet", f"oci-archive:{image.archive}", timeout=600)
        made.append(done.stdout.strip().splitlines()[-1])
        return made[-1]

    yield new
    for ctr in made:
        subprocess.run(["buildah", "rm", ctr], capture_output=True, timeout=120, check=False)


def _buildah(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"buildah {args[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def _render_region(helm_bin: Path, config: dict[str, Any], where: Path) -> tuple[Rendered, dict[str, str], Path]:
    """The chart rendered for ``config`` split as an operator would: (manifests, the secret's data, a directory
    holding the ConfigMap's ``config.yaml`` as Kubernetes would mount it)."""
    public, secret = split_secrets(config)
    values = {
        "replication": {
            "image": {"repository": "localhost/lakefs-mirror"},
            "extraEnvVarsSecret": SECRET_NAME,
            "config": public,
        }
    }
    rendered, _ = render(helm_bin, values=values)
    where.mkdir(mode=0o755)
    (where / "config.yaml").write_text(rendered.config_text())
    (where / "config.yaml").chmod(0o644)  # readable by the image's non-root user, like a mounted ConfigMap
    assert yaml.safe_load(rendered.config_text()) == public
    return rendered, secret, where


def _container_env(container: dict[str, Any], secret: dict[str, str]) -> dict[str, str]:
    """What Kubernetes would give the container: its ``env`` and, for ``envFrom`` of our secret, its keys."""
    env = {e["name"]: e["value"] for e in container["env"]}
    assert container["envFrom"] == [{"secretRef": {"name": SECRET_NAME}}]
    return {**secret, **env}


def _run_argv(ctr: str, mount: Path, entrypoint: list[str], args: list[str]) -> list[str]:
    return [
        "buildah", "run", "--isolation", "chroot", "--network", "host",
        "--volume", f"{mount}:/etc/lakefs-mirror:ro", ctr, "--", *entrypoint, *args,
    ]  # fmt: skip


def _prepare(ctr: str, env: dict[str, str]) -> list[str]:
    """Set the container's environment (not on a command line) and return the image's entrypoint."""
    for name, value in env.items():
        _buildah("config", "--env", f"{name}={value}", ctr)
    config = json.loads(_buildah("inspect", "--type", "container", ctr).stdout)["OCIv1"]["config"]
    assert config["User"] == "10001:10001", "the image runs as its non-root user"
    entrypoint = list(config["Entrypoint"])
    assert entrypoint[-1].endswith("/lakefs-mirror")
    return entrypoint


def _get(url: str, auth: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _post(url: str, auth: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_rendered_chart_runs_in_the_image_and_a_mirror_converges(
    image: Image,
    containers: Callable[[], str],
    helm_bin: Path,
    lakefs_env: Environment,
    config_path: Callable[[str], Path],
    postgres_url: str,
    client_for: Callable[[str], LakeFSClient],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    # Each region's dev config, sharing a PostgreSQL mirrors database (the image's `postgres` extra; a SQLite file
    # would have to be shared through the file system), rendered through the chart.
    rendered: dict[str, tuple[Rendered, dict[str, str], Path]] = {}
    for region in ("region-a", "region-c"):
        raw = yaml.safe_load(config_path(region).read_text())
        raw["mirrors_database"] = {"type": "postgres", "postgres": {"connection_string": postgres_url}}
        rendered[region] = _render_region(helm_bin, raw, tmp_path / region)

    # The source region's `serve` container, on a loopback port instead of the pod's 0.0.0.0:8008.
    manifests, secret, mount = rendered["region-a"]
    serve = manifests.containers()["serve"]
    port = free_port()
    args = [f"127.0.0.1:{port}" if a.startswith("0.0.0.0:") else a for a in serve["args"]]
    assert args[:2] == ["serve", "--listen"]
    serve_ctr = containers()
    entrypoint = _prepare(serve_ctr, _container_env(serve, secret))
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(_run_argv(serve_ctr, mount, entrypoint, args), stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        probe = serve["readinessProbe"]["httpGet"]["path"]
        deadline = time.monotonic() + _WAIT_S
        while True:
            assert server.poll() is None, f"serve exited {server.returncode}:\n{(tmp_path / 'serve.log').read_text()}"
            try:
                if _get(url + probe)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"serve not ready:\n{(tmp_path / 'serve.log').read_text()}"
            time.sleep(0.5)

        # A source repository with a commit, and a mirror of it in region-c created through the API.
        region_a = lakefs_env.region("region-a")
        src = client_for("region-a")
        repo, name = unique_name("img"), unique_name("mirror")
        src.create_repository(repo, region_a.namespace_for(repo))
        src.upload_object(repo, "main", "data/one", b"one")
        src.commit(repo, "main", "one")
        user = f"{region_a.access_key_id}:{region_a.secret_access_key}"
        mirrors_url = f"{url}/service/replication/v1/repositories/{repo}/mirrors"
        namespace = lakefs_env.region("region-c").namespace_for(name)
        status, mirror = _post(mirrors_url, user, {"name": name, "region": "region-c", "storage_namespace": namespace})
        assert status == 201, mirror

        # The destination region's `sync` container, one pass over this mirror (the pod's loop, bounded).
        manifests_c, secret_c, mount_c = rendered["region-c"]
        sync = manifests_c.containers()["sync"]
        assert sync["args"] == ["sync"]
        sync_ctr = containers()
        entrypoint_c = _prepare(sync_ctr, _container_env(sync, secret_c))
        done = subprocess.run(
            _run_argv(sync_ctr, mount_c, entrypoint_c, [*sync["args"], "--once", "--mirror", name]),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"sync failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        assert f"mirror {name} <- {repo}" in done.stdout

        assert_mirror_equals_source(src, repo, client_for("region-c"), name)
        assert client_for("region-c").get_object(name, "main", "data/one") == b"one"
        status, got = _get(f"{mirrors_url}/{mirror['id']}", user)
        assert status == 200 and got["state"] == "active", got
        head = src.get_branch_head(repo, "main")
        assert {b["branch"]: b["mirrored_commit_id"] for b in got["branches"]}.get("main") == head, got
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=60)
        log.close()
