"""``lakefs-mirror serve`` as a user starts it: the authorization mode in its start-up log, policies and TLS from
the config, and ``serve --policies`` winning over ``auth.policies_file``. Against region-a's real lakeFS."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port, start_process, stop_pid, wait_http_ok

from .certs import ServerCertificates, make_certificates
from .conftest import curl

pytestmark = pytest.mark.integration

_CHECKOUT = Path(__file__).resolve().parents[2]
SHIPPED = _CHECKOUT / "deploy" / "policies" / "least-privilege.yaml"


def _policies(path: Path, everyone: str) -> Path:
    """The shipped policies with every authenticated user given ``everyone``'s policy."""
    doc = yaml.safe_load(SHIPPED.read_text())
    doc["users"] = {"*": [everyone]}
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def serve_cli(config_path: Callable[[str], Path], tmp_path: Path, lakefs_env: Environment) -> Callable[..., Any]:
    """``with serve_cli(config_changes, *flags) as (url, log):`` region-a's config with ``config_changes``
    (top-level sections merged), served by ``lakefs-mirror serve``; ``log()`` reads what it has logged."""

    @contextmanager
    def run(changes: dict[str, Any], *flags: str, scheme: str = "http") -> Iterator[tuple[str, Callable[[], str]]]:
        config = yaml.safe_load(config_path("region-a").read_text())
        for key, value in changes.items():
            config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
        run_dir = tmp_path / f"serve-{free_port()}"
        run_dir.mkdir()
        path = run_dir / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        port = free_port()
        log_path = run_dir / "serve.log"
        argv = [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(path), "serve"]
        env = {"PYTHONPATH": os.pathsep.join([str(_CHECKOUT), os.environ.get("PYTHONPATH", "")])}
        process = start_process([*argv, "--listen", f"127.0.0.1:{port}", *flags], log_path=log_path, env=env)
        try:
            url = f"{scheme}://127.0.0.1:{port}"
            wait_http_ok(f"{url}/_health", timeout_s=60, process=process, log_path=log_path)
            yield url, log_path.read_text
        finally:
            stop_pid(process.pid, timeout_s=20)

    return run


def _delete_unknown(url: str, user: str, *curl_flags: str) -> int:
    """Deleting a mirror that does not exist: 403 without fs:DeleteRepository, else 404 (nothing changes)."""
    target = f"{url}/service/replication/v1/repositories/some-repo/mirrors/no-such-mirror"
    return curl(target, "-u", user, "-X", "DELETE", *curl_flags).status


def test_without_policies_the_log_warns_that_every_user_may_do_everything_and_hooks_are_open(
    serve_cli, lakefs_env
) -> None:
    region = lakefs_env.region("region-a")
    with serve_cli({"hooks": {"enabled": True, "secret": ""}}) as (url, log):
        assert _delete_unknown(url, f"{region.access_key_id}:{region.secret_access_key}") == 404
        text = log()
    [line] = [line for line in text.splitlines() if "authorization:" in line]
    assert "WARN" in line and "OPEN" in line and "ANY authenticated lakeFS user of region region-a" in line
    # what the real (open-source) lakeFS says of its own authorization
    assert "reports RBAC 'none'" in line and "no RBAC of its own (open source" in line
    assert "serving on http://127.0.0.1" in text and "plain HTTP" in text
    assert "hooks.enabled without hooks.secret: anyone who reaches this server can queue mirror syncs" in text


def test_policies_and_tls_from_the_config_and_the_flag_wins(
    serve_cli, lakefs_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    region = lakefs_env.region("region-a")
    user = f"{region.access_key_id}:{region.secret_access_key}"
    readers = _policies(tmp_path / "readers.yaml", "MirrorReaders")
    admins = _policies(tmp_path / "admins.yaml", "MirrorAdmins")
    certs: ServerCertificates = make_certificates(tmp_path / "tls")
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca_file))  # so the start-up wait trusts the test CA
    tls = {"cert_file": str(certs.cert_file), "key_file": str(certs.key_file)}
    from_config = {"auth": {"policies_file": str(readers)}, "tls": tls}
    ca = ("--cacert", str(certs.ca_file))

    with serve_cli(from_config, scheme="https") as (url, log):
        assert _delete_unknown(url, user, *ca) == 403  # a reader may not delete
        text = log()
    assert f"authorization: policies from {readers}" in text and "OPEN" not in text and "hooks.secret" not in text
    assert "serving on https://127.0.0.1" in text and f"certificate {certs.cert_file}" in text

    with serve_cli(from_config, "--policies", str(admins), scheme="https") as (url, log):
        assert _delete_unknown(url, user, *ca) == 404  # the flag's admins policy: allowed, nothing to delete
        text = log()
    assert f"authorization: policies from {admins}" in text and str(readers) not in text
