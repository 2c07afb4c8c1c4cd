"""Local emulators of Google Cloud Storage (fake-gcs-server) and Azure Blob Storage (Azurite).

Why emulators: the gs and azure blockstores must be tested against something that speaks the real wire
protocols through the official SDKs, with no cloud account. Both are installed from their package
registries on first use, like lakeFS and MinIO (``build.py``): fake-gcs-server with ``go install`` from the
Go module proxy, Azurite with ``npm install`` from npm, into ``cache_dir()``, keyed by version, under a file
lock, landing atomically. Servers bind 127.0.0.1 on a free port, keep data in memory (or a temporary
directory), and are stopped by the pid we recorded.
"""

from __future__ import annotations

import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .build import _build_lock, cache_dir, executable_from_env, go_install_binary
from .processes import DevenvError, free_port, start_process, stop_pid
from .servers import LakeFSRegion, start_lakefs_on

__all__ = [
    "AZURITE_ACCOUNT",
    "AZURITE_KEY",
    "AZURITE_VERSION",
    "FAKE_GCS_MODULE",
    "FAKE_GCS_VERSION",
    "AzuriteServer",
    "FakeGCSServer",
    "ensure_azurite",
    "ensure_fake_gcs_binary",
    "start_azurite",
    "start_fake_gcs",
    "start_lakefs_on_azurite",
    "stop_azurite",
    "stop_fake_gcs",
]

FAKE_GCS_MODULE = "github.com/fsouza/fake-gcs-server"
FAKE_GCS_VERSION = "v1.56.1"
AZURITE_VERSION = "3.37.0"
#: Azurite's well-known development account and key (public, documented by Microsoft; not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

_START_TIMEOUT_S = 120.0  # Azurite alone took 16 s on a loaded 2-core machine
_NPM_TIMEOUT_S = 1200


# --------------------------------------------------------------------------------------------------------
# Installation
# --------------------------------------------------------------------------------------------------------


def ensure_fake_gcs_binary() -> Path:
    """Path of the pinned fake-gcs-server, ``go install``-ed on first use (``$FAKE_GCS_BIN`` wins)."""
    return go_install_binary(
        FAKE_GCS_MODULE, FAKE_GCS_VERSION, "fake-gcs-server", override_var="FAKE_GCS_BIN", what="fake-gcs-server"
    )


def ensure_azurite() -> Path:
    """Path of the pinned Azurite blob server script, ``npm install``-ed on first use (``$AZURITE_BLOB_BIN`` wins).

    The install goes into a staging directory that is renamed into place only when complete.
    """
    override = os.environ.get("AZURITE_BLOB_BIN")
    if override:
        return executable_from_env(override, "AZURITE_BLOB_BIN")
    prefix = cache_dir() / "npm" / f"azurite-{AZURITE_VERSION}"
    target = prefix / "node_modules" / ".bin" / "azurite-blob"
    if target.exists():
        return target
    with _build_lock("azurite"):
        if target.exists():
            return target
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            raise DevenvError(
                "Node.js is not installed (no `node`/`npm` on PATH); the Azurite emulator is installed from npm "
                "(`apt-get install nodejs npm`)"
            )
        staging = prefix.with_name(f".azurite-{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        argv = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", f"azurite@{AZURITE_VERSION}"]
        print(f"[devenv] installing Azurite ({' '.join(argv[1:])}); the first install takes a minute", file=sys.stderr)
        start = time.monotonic()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=_NPM_TIMEOUT_S, cwd=staging)
            if proc.returncode != 0:
                raise DevenvError(f"installing Azurite failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
            if not (staging / "node_modules" / ".bin" / "azurite-blob").exists():
                raise DevenvError(f"npm installed azurite@{AZURITE_VERSION} but it has no azurite-blob script")
            shutil.rmtree(prefix, ignore_errors=True)
            staging.replace(prefix)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        print(f"[devenv] installed Azurite in {time.monotonic() - start:.0f}s", file=sys.stderr)
        return target


# --------------------------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FakeGCSServer:
    """A running fake-gcs-server: ``endpoint`` is what ``STORAGE_EMULATOR_HOST`` / ``gs.endpoint`` take."""

    endpoint: str
    pid: int
    log_path: Path


@dataclass(frozen=True)
class AzuriteServer:
    """A running Azurite blob service; blob URLs are ``{endpoint}/{account}/{container}/{path}``."""

    endpoint: str
    account: str
    key: str
    pid: int
    log_path: Path
    data_dir: Path

    @property
    def account_url(self) -> str:
        """The account's base URL in the emulator's path-style form."""
        return f"{self.endpoint}/{self.account}"


def start_fake_gcs(work_dir: Path) -> FakeGCSServer:
    """Start fake-gcs-server on 127.0.0.1 with an in-memory backend; the log goes to ``work_dir``."""
    binary = ensure_fake_gcs_binary()
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log_path = work_dir / "fake-gcs-server.log"
    process = start_process(
        [
            str(binary),
            "-backend",
            "memory",
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-port",
            str(port),
            "-public-host",
            f"127.0.0.1:{port}",
            "-external-url",
            endpoint,
            "-log-level",
            "warn",
        ],
        log_path=log_path,
    )
    try:
        _wait_http_answers(endpoint, "/storage/v1/b", process, log_path)
    except BaseException:
        stop_pid(process.pid)
        raise
    return FakeGCSServer(endpoint=endpoint, pid=process.pid, log_path=log_path)


def stop_fake_gcs(server: FakeGCSServer) -> None:
    """Stop the server we started (by its recorded pid)."""
    stop_pid(server.pid)


def start_azurite(work_dir: Path) -> AzuriteServer:
    """Start Azurite's blob service on 127.0.0.1, in-memory, with the well-known development account."""
    script = ensure_azurite()
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    work_dir.mkdir(parents=True, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="azurite-", dir=work_dir))
    log_path = work_dir / "azurite.log"
    process = start_process(
        [
            str(script),
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(port),
            "--inMemoryPersistence",
            "--skipApiVersionCheck",
            "--disableProductStyleUrl",
            # no network beyond 127.0.0.1: Azurite would otherwise send usage telemetry
            "--disableTelemetry",
            "--silent",
        ],
        log_path=log_path,
        cwd=data_dir,  # in-memory mode writes nothing, but anything stray lands in our temporary directory
        # Our own account list would replace the default one; keep the documented development account.
        env={"AZURITE_ACCOUNTS": f"{AZURITE_ACCOUNT}:{AZURITE_KEY}"},
    )
    try:
        _wait_http_answers(endpoint, f"/{AZURITE_ACCOUNT}?comp=list", process, log_path)
    except BaseException:
        stop_pid(process.pid)
        raise
    return AzuriteServer(
        endpoint=endpoint,
        account=AZURITE_ACCOUNT,
        key=AZURITE_KEY,
        pid=process.pid,
        log_path=log_path,
        data_dir=data_dir,
    )


def stop_azurite(server: AzuriteServer) -> None:
    """Stop the server we started and remove its (empty, in-memory mode) data directory."""
    stop_pid(server.pid)
    shutil.rmtree(server.data_dir, ignore_errors=True)


def _wait_http_answers(
    endpoint: str, path: str, process: subprocess.Popen[bytes], log_path: Path, timeout_s: float = _START_TIMEOUT_S
) -> None:
    """Wait until the server answers HTTP at all (Azurite answers 403 to an unsigned request: that is up)."""
    host_port = endpoint.split("://", 1)[1]
    deadline = time.monotonic() + timeout_s
    last = ""
    for _ in range(int(timeout_s / 0.1) + 1):
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
            raise DevenvError(
                f"emulator exited with code {process.returncode} before answering; log {log_path}:\n{tail}"
            )
        conn = http.client.HTTPConnection(host_port, timeout=2)
        try:
            conn.request("GET", path)
            conn.getresponse().read()
            return
        except OSError as exc:
            last = str(exc)
        finally:
            conn.close()
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    raise DevenvError(f"emulator at {endpoint} did not answer within {timeout_s:.0f}s ({last}); log {log_path}")


def start_lakefs_on_azurite(name: str, base_dir: Path, azurite: AzuriteServer, container: str) -> LakeFSRegion:
    """Start a lakeFS region whose blockstore is Azure Blob on ``azurite`` (lakeFS's ``test_endpoint_url``).

    Namespaces are lakeFS's Azure form, ``https://<account>.blob.core.windows.net/<container>/<repo>``;
    lakeFS (and our azure blockstore configured like it) sends the requests to the emulator. Stop it with
    ``stop_pid(region.pid)``.
    """
    blockstore: dict[str, Any] = {
        "type": "azure",
        "azure": {
            "storage_account": azurite.account,
            "storage_access_key": azurite.key,
            "test_endpoint_url": azurite.account_url,
        },
    }
    namespace_root = f"https://{azurite.account}.blob.core.windows.net/{container}"
    return start_lakefs_on(name, base_dir, blockstore, namespace_root)
