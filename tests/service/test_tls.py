"""HTTPS for ``serve``: a certificate the test makes, spoken to by lakeFS's own Python SDK and by curl.

A bad certificate or key is refused before the server starts, in one line (``serve`` as a user runs it).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.cli import ExitCode
from lakefs_mirror_dagster.config import ConfigError, dump_example_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.service import TLSFiles, create_app, running_server, tls_files
from tests.cli_process import run_cli

from .certs import ServerCertificates, make_certificates
from .conftest import curl

API = "/service/replication/v1"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> ServerCertificates:
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def https_api(
    certs: ServerCertificates, service_for: Callable[[str], ReplicationService], lakefs_env: Environment
) -> Iterator[tuple[str, str, str]]:
    """(https base URL, access key id, secret) of a live HTTPS server for region-a."""
    tls = tls_files(str(certs.cert_file), str(certs.key_file))
    assert tls is not None
    region = lakefs_env.region("region-a")
    with running_server(create_app(service_for("region-a")), "127.0.0.1", free_port(), tls=tls) as url:
        yield url, region.access_key_id, region.secret_access_key


def _sdk_get(base: str, ca: Path, path: str, credentials: tuple[str, str] | None) -> tuple[int, Any]:
    """GET through lakeFS's Python SDK client (Basic auth, CA from ``ssl_ca_cert``), as a lakeFS client would."""
    import lakefs_sdk
    from lakefs_sdk.exceptions import ApiException

    conf = lakefs_sdk.Configuration(host=base, ssl_ca_cert=str(ca))
    if credentials:
        conf.username, conf.password = credentials
    with lakefs_sdk.ApiClient(conf) as client:
        try:
            response = client.call_api(
                path,
                "GET",
                header_params={"Accept": "application/json"},
                auth_settings=["basic_auth"],
                response_types_map={"200": "bytearray"},
            )
        except ApiException as exc:
            return int(exc.status), json.loads(exc.body) if exc.body else None
        return int(response.status_code), json.loads(response.raw_data)


@pytest.mark.integration
def test_the_api_over_https_with_lakefs_sdk_and_curl(
    https_api: tuple[str, str, str], certs: ServerCertificates
) -> None:
    url, key, secret = https_api
    assert url.startswith("https://127.0.0.1:")

    status, body = _sdk_get(url, certs.ca_file, f"{API}/config/storages", (key, secret))
    assert status == 200 and [s["type"] for s in body["results"]] == ["s3"]
    status, body = _sdk_get(url, certs.ca_file, f"{API}/repositories/no-such-repo/mirrors", (key, secret))
    assert status == 200 and body["results"] == []
    status, body = _sdk_get(url, certs.ca_file, f"{API}/config/storages", None)
    assert status == 401 and "authentication required" in body["message"]

    answer = curl(f"{url}{API}/config/storages", "--cacert", str(certs.ca_file), "-u", f"{key}:{secret}")
    assert answer.status == 200 and answer.body["results"][0]["type"] == "s3"
    assert curl(f"{url}/_health", "--cacert", str(certs.ca_file)).status == 200
    assert curl(f"{url}{API}/config/storages", "--cacert", str(certs.ca_file)).status == 401

    # Without the CA, curl refuses the certificate (exit 60); plain HTTP to the HTTPS port gets no HTTP answer.
    untrusted = subprocess.run(["curl", "-s", "--max-time", "30", f"{url}/_health"], capture_output=True, timeout=60)
    assert untrusted.returncode == 60
    plain_url = url.replace("https://", "http://") + "/_health"
    plain = subprocess.run(
        ["curl", "-s", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}", plain_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode != 0 and plain.stdout == "000", (plain.returncode, plain.stdout)  # no HTTP answer


def test_tls_files_load_or_are_refused_naming_the_file(certs: ServerCertificates, tmp_path: Path) -> None:
    assert tls_files("", "") is None
    assert tls_files(str(certs.cert_file), str(certs.key_file)) == TLSFiles(str(certs.cert_file), str(certs.key_file))
    with pytest.raises(
        ConfigError, match=re.escape("--tls-cert/tls.cert_file is set but --tls-key/tls.key_file is not")
    ):
        tls_files(str(certs.cert_file), "")
    with pytest.raises(
        ConfigError, match=re.escape("--tls-key/tls.key_file is set but --tls-cert/tls.cert_file is not")
    ):
        tls_files("", str(certs.key_file))
    with pytest.raises(ConfigError, match=re.escape(f"cannot read the TLS certificate {tmp_path}/missing.pem")):
        tls_files(str(tmp_path / "missing.pem"), str(certs.key_file))
    with pytest.raises(ConfigError, match="do not load together"):
        tls_files(str(certs.cert_file), str(certs.other_key_file))
    with pytest.raises(ConfigError, match="do not load together"):
        tls_files(str(certs.key_file), str(certs.key_file))  # a key is no certificate


def _config_file(directory: Path, **top: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load(dump_example_config())
    data.update(top)
    path = directory / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return path


def _refusal(tmp_path: Path, config: Path, *flags: str) -> str:
    done = run_cli("--config", str(config), "serve", "--listen", f"127.0.0.1:{free_port()}", *flags, cwd=tmp_path)
    assert done.returncode == ExitCode.CONFIG, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lakefs-mirror: ")
    return line


def test_serve_refuses_a_bad_tls_setting_at_start_in_one_line(certs: ServerCertificates, tmp_path: Path) -> None:
    plain = _config_file(tmp_path / "plain")
    assert "--tls-key/tls.key_file is not" in _refusal(tmp_path, plain, "--tls-cert", str(certs.cert_file))
    assert "cannot read the TLS key" in _refusal(
        tmp_path, plain, "--tls-cert", str(certs.cert_file), "--tls-key", str(tmp_path / "nope.pem")
    )
    # The config's pair is read the same way; a flag replaces the config's file.
    mismatched = _config_file(
        tmp_path / "mismatched", tls={"cert_file": str(certs.cert_file), "key_file": str(certs.other_key_file)}
    )
    assert "do not load together" in _refusal(tmp_path, mismatched)
    assert "cannot read the TLS certificate" in _refusal(tmp_path, mismatched, "--tls-cert", str(tmp_path / "x.pem"))
    half = _config_file(tmp_path / "half", tls={"cert_file": str(certs.cert_file)})
    line = _refusal(tmp_path, half)
    assert "tls.key_file" in line and "required when tls.cert_file is set" in line
