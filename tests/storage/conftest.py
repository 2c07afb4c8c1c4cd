"""Fixtures for the blockstore tests: a real MinIO server, S3 and local stores, fresh buckets.

``s3_server`` reuses the suite-wide ``minio`` fixture when tests/conftest.py provides one; otherwise (or
with ``LAKEFS_MIRROR_STORAGE_OWN_MINIO=1``) it starts its own MinIO from ``$MINIO_BINARY`` or
/tmp/miniobuild/minio on 127.0.0.1 and stops it at the end. A missing binary is an error, not a skip.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import boto3
import botocore.config
import pytest

from lakefs_mirror_dagster.storage import LocalBlockstore, S3Blockstore, TransientStorageError

MiB = 1024 * 1024
DEFAULT_MINIO_BINARY = "/tmp/miniobuild/minio"
START_TIMEOUT_S = 60.0


class S3ServerLike(Protocol):
    endpoint: str
    access_key: str
    secret_key: str

    def make_bucket(self, name: str) -> str: ...


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class OwnMinio:
    """A MinIO server started by these tests (same attributes as the suite's ``minio`` fixture)."""

    endpoint: str
    access_key: str
    secret_key: str
    process: subprocess.Popen[bytes]
    log_path: Path
    _client: Any = field(default=None, repr=False)

    def s3_client(self) -> Any:
        if self._client is None:
            self._client = boto3.client(
                "s3",
                endpoint_url=self.endpoint,
                aws_access_key_id=self.access_key,
                aws_secret_access_key=self.secret_key,
                region_name="us-east-1",
                config=botocore.config.Config(s3={"addressing_style": "path"}),
            )
        return self._client

    def make_bucket(self, name: str) -> str:
        client = self.s3_client()
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def _start_minio(base: Path) -> OwnMinio:
    binary = os.environ.get("MINIO_BINARY", DEFAULT_MINIO_BINARY)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)) and not shutil.which(binary):
        pytest.fail(f"no MinIO binary at {binary} (set MINIO_BINARY, or let tests/conftest.py provide `minio`)")
    data_dir = base / "data"
    data_dir.mkdir()
    log_path = base / "minio.log"
    access_key = "storage-tests"
    secret_key = secrets.token_hex(16)
    port, console_port = _free_port(), _free_port()
    env = {**os.environ, "MINIO_ROOT_USER": access_key, "MINIO_ROOT_PASSWORD": secret_key}
    env.pop("MINIO_VOLUMES", None)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                binary,
                "server",
                str(data_dir),
                "--address",
                f"127.0.0.1:{port}",
                "--console-address",
                f"127.0.0.1:{console_port}",
                "--quiet",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = OwnMinio(f"http://127.0.0.1:{port}", access_key, secret_key, process, log_path)
    deadline = time.monotonic() + START_TIMEOUT_S
    for _ in range(int(START_TIMEOUT_S / 0.2) + 1):
        if process.poll() is not None:
            pytest.fail(f"MinIO exited with {process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.endpoint}/minio/health/live", timeout=2) as response:
                if response.status == 200:
                    return server
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    server.stop()
    pytest.fail(f"MinIO did not become healthy within {START_TIMEOUT_S}s: {log_path.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def s3_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3ServerLike]:
    """A real S3 endpoint: the suite's ``minio`` if available, else our own MinIO process."""
    shared: S3ServerLike | None = None
    if not os.environ.get("LAKEFS_MIRROR_STORAGE_OWN_MINIO"):
        try:
            shared = request.getfixturevalue("minio")
        except pytest.FixtureLookupError:
            shared = None
        except Exception as exc:  # the shared environment failed to start: test storage on our own server
            warnings.warn(f"shared `minio` fixture unavailable ({exc}); starting a private MinIO", stacklevel=1)
            shared = None
    if shared is not None:
        yield shared
        return
    own = _start_minio(tmp_path_factory.mktemp("minio"))
    try:
        yield own
    finally:
        own.stop()


@pytest.fixture
def make_bucket(s3_server: S3ServerLike) -> Callable[[str], str]:
    """Creates a bucket with a unique name per call (tests never see each other's objects)."""

    def make(prefix: str = "t") -> str:
        return s3_server.make_bucket(f"{prefix}-{uuid.uuid4().hex[:12]}")

    return make


@pytest.fixture
def bucket(make_bucket: Callable[[str], str]) -> str:
    return make_bucket("t")


def s3_store_for(server: S3ServerLike, **overrides: Any) -> S3Blockstore:
    settings: dict[str, Any] = {
        "endpoint": server.endpoint,
        "region": "us-east-1",
        "access_key_id": server.access_key,
        "secret_access_key": server.secret_key,
        "force_path_style": True,
        "multipart_threshold": 5 * MiB,
        "multipart_chunk_size": 5 * MiB,
    }
    settings.update(overrides)
    return S3Blockstore(**settings)


@pytest.fixture
def s3_store(s3_server: S3ServerLike) -> S3Blockstore:
    """Small multipart threshold/chunks (5 MiB) so multipart paths run on modest objects."""
    return s3_store_for(s3_server)


@pytest.fixture
def local_store(tmp_path: Path) -> LocalBlockstore:
    root = tmp_path / "block"
    root.mkdir()
    return LocalBlockstore(root=root)


class FailingStream:
    """Delivers ``good`` bytes, then fails the way a dropped source connection would (``error``: what it raises)."""

    def __init__(self, good: bytes, error: type[Exception] = TransientStorageError) -> None:
        self._good = io.BytesIO(good)
        self._error = error

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._good.read(size)
        if not chunk:
            raise self._error("source connection dropped")
        return chunk


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
