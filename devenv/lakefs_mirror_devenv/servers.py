"""One lakeFS server and one MinIO server, each started on loopback and described as plain data.

The descriptions (``LakeFSRegion``, ``MinioInstance``) are what ``devenv up`` writes to its state file and
what the tests, the demo and users read back: endpoints, credentials, and the storage settings the
replication config needs to write into that region's storage.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .build import ensure_lakefs_binary, ensure_minio_binary
from .processes import DevenvError, free_port, start_process, stop_pid, wait_http_ok

__all__ = ["LakeFSRegion", "MinioInstance", "path_style_s3_client", "start_lakefs", "start_lakefs_on", "start_minio"]

_LAKEFS_START_TIMEOUT_S = 120.0
_MINIO_START_TIMEOUT_S = 60.0
# Where lakeFS would phone home; pointed at a closed loopback port so nothing leaves the machine.
_NOWHERE = "http://127.0.0.1:9/"


@dataclass
class MinioInstance:
    """A running MinIO server: S3 endpoint and its root credentials."""

    name: str
    endpoint: str
    access_key: str
    secret_key: str
    data_dir: str
    pid: int
    log_path: str
    startup_seconds: float = 0.0

    def s3_client(self, *, read_timeout: float = 60) -> Any:
        """A boto3 S3 client for this server (path-style, as MinIO wants)."""
        return path_style_s3_client(self.endpoint, self.access_key, self.secret_key, read_timeout=read_timeout)

    def make_bucket(self, name: str) -> str:
        """Create ``name`` unless it exists; returns it (a refusal is a ``DevenvError`` naming the bucket)."""
        import botocore.exceptions

        client = self.s3_client()
        try:
            existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
            if name not in existing:
                client.create_bucket(Bucket=name)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            raise DevenvError(f"MinIO {self.name} ({self.endpoint}) cannot create bucket {name!r}: {exc}") from exc
        return name


def path_style_s3_client(
    endpoint: str, access_key: str, secret_key: str, *, max_attempts: int = 5, read_timeout: float = 60
) -> Any:
    """A boto3 S3 client with path-style addressing (MinIO and lakeFS's gateway on a loopback port)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name="us-east-1",
        config=Config(
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "max_attempts": max_attempts},
            read_timeout=read_timeout,
        ),
    )


@dataclass
class LakeFSRegion:
    """A running lakeFS installation playing one region.

    ``blockstore`` has the shape of lakeFS's (and the replication config's) ``blockstore`` section, so the
    mirroring engine can write into exactly the storage this lakeFS reads. ``namespace_root`` is where
    repositories of this region put their storage namespaces (``s3://bucket`` or ``local://``). ``database`` is
    lakeFS's ``database`` section when it is not local KV (a database the replication service can write commit
    records into: ``refstore_database``), else None.
    """

    name: str
    endpoint: str
    access_key_id: str
    secret_access_key: str
    blockstore: dict[str, Any]
    namespace_root: str
    base_dir: str
    pid: int
    log_path: str
    auth_secret_key: str
    minio: str | None = None
    startup_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    database: dict[str, Any] | None = None

    @property
    def api_url(self) -> str:
        return f"{self.endpoint}/api/v1"

    def s3_gateway_client(self) -> Any:
        """boto3 on this lakeFS's S3 gateway, as a user configures it: bucket = repository, key = ref/path."""
        return path_style_s3_client(self.endpoint, self.access_key_id, self.secret_access_key, max_attempts=3)

    def namespace_for(self, repository: str) -> str:
        """A fresh storage namespace for ``repository`` in this region's storage."""
        root = self.namespace_root
        return f"{root}{repository}" if root.endswith("://") else f"{root.rstrip('/')}/{repository}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def start_minio(name: str, base_dir: Path, *, access_key: str | None = None) -> MinioInstance:
    """Start a MinIO server with its own data directory and credentials on a free loopback port."""
    binary = ensure_minio_binary()
    data_dir = base_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    port, console_port = free_port(), free_port()
    access_key = access_key or f"{name.replace('-', '')}admin"
    secret_key = secrets.token_hex(16)
    log_path = base_dir / "minio.log"
    proc = start_process(
        [
            str(binary),
            "server",
            str(data_dir),
            "--address",
            f"127.0.0.1:{port}",
            "--console-address",
            f"127.0.0.1:{console_port}",
            "--quiet",
        ],
        log_path=log_path,
        env={
            "MINIO_ROOT_USER": access_key,
            "MINIO_ROOT_PASSWORD": secret_key,
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
            "MINIO_CALLHOME_ENABLE": "off",
            # requests by S3 operation, for benchmarks (the server listens on loopback only)
            "MINIO_PROMETHEUS_AUTH_TYPE": "public",
        },
    )
    endpoint = f"http://127.0.0.1:{port}"
    waited = wait_http_ok(
        f"{endpoint}/minio/health/live", timeout_s=_MINIO_START_TIMEOUT_S, process=proc, log_path=log_path
    )
    return MinioInstance(
        name=name,
        endpoint=endpoint,
        access_key=access_key,
        secret_key=secret_key,
        data_dir=str(data_dir),
        pid=proc.pid,
        log_path=str(log_path),
        startup_seconds=waited,
    )


def start_lakefs(
    name: str,
    base_dir: Path,
    *,
    minio: MinioInstance | None = None,
    auth_secret: str | None = None,
    admin_keys: tuple[str, str] | None = None,
    pre_signed_endpoint: str | None = None,
    database: dict[str, Any] | None = None,
) -> LakeFSRegion:
    """Start one lakeFS with local KV (or ``database``, lakeFS's section), its own cache dir, and either a local or
    a MinIO blockstore.

    Admin credentials are created headlessly through lakeFS's installation settings (local KV only): fresh ones,
    or ``admin_keys`` (access key id, secret), so several regions can share one user's keys.
    ``pre_signed_endpoint``: the address lakeFS's presigned URLs name instead of MinIO's (a link's proxy).
    """
    base_dir.mkdir(parents=True, exist_ok=True)
    if minio is None:
        block_root = base_dir / "block"
        block_root.mkdir(exist_ok=True)
        blockstore: dict[str, Any] = {"type": "local", "local": {"path": str(block_root)}}
        namespace_root = "local://"
    else:
        bucket = minio.make_bucket(name)
        blockstore = {
            "type": "s3",
            "s3": {
                "endpoint": minio.endpoint,
                "force_path_style": True,
                "region": "us-east-1",
                "credentials": {"access_key_id": minio.access_key, "secret_access_key": minio.secret_key},
            },
        }
        namespace_root = f"s3://{bucket}"
    return start_lakefs_on(
        name,
        base_dir,
        blockstore,
        namespace_root,
        minio=minio.name if minio else None,
        auth_secret=auth_secret,
        admin_keys=admin_keys,
        lakefs_settings={"pre_signed_endpoint": pre_signed_endpoint} if pre_signed_endpoint else None,
        database=database,
    )


def _lakefs_blockstore(blockstore: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """lakeFS's own section for ``blockstore`` (the replication config's shape): on S3, lakeFS is told not to look
    up each bucket's region (MinIO has one), a lakeFS setting that the replication config refuses; ``settings``
    are more such lakeFS-only S3 settings (``pre_signed_endpoint``)."""
    if blockstore.get("type") != "s3":
        return blockstore
    return {**blockstore, "s3": {**blockstore.get("s3", {}), "discover_bucket_region": False, **(settings or {})}}


def start_lakefs_on(
    name: str,
    base_dir: Path,
    blockstore: dict[str, Any],
    namespace_root: str,
    *,
    minio: str | None = None,
    auth_secret: str | None = None,
    database: dict[str, Any] | None = None,
    admin_keys: tuple[str, str] | None = None,
    lakefs_settings: dict[str, Any] | None = None,
) -> LakeFSRegion:
    """Start one lakeFS with local KV on ``blockstore`` (lakeFS's own section), stopped again if it never answers.

    ``auth_secret``: its ``auth.encrypt.secret_key``, shared by the regions of one organisation (a fresh one if
    None); their replication services refuse to share a mirrors database otherwise. ``database``: lakeFS's
    ``database`` section instead of local KV (e.g. PostgreSQL); the admin is then created with ``lakefs setup``,
    since lakeFS applies its installation settings on local KV only. ``admin_keys``: the admin's (access key id,
    secret access key), fresh ones if None."""
    binary = ensure_lakefs_binary()
    base_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    access_key_id, secret_access_key = admin_keys or ("AKIA" + secrets.token_hex(8).upper(), secrets.token_urlsafe(30))
    auth_secret = auth_secret or secrets.token_hex(16)
    config = {
        "listen_address": f"127.0.0.1:{port}",
        "logging": {"level": "INFO", "format": "text", "output": str(base_dir / "lakefs.log")},
        "database": database or {"type": "local", "local": {"path": str(base_dir / "metadata")}},
        "committed": {"local_cache": {"dir": str(base_dir / "cache")}},
        "blockstore": _lakefs_blockstore(blockstore, lakefs_settings),
        "auth": {"encrypt": {"secret_key": auth_secret}},
        "installation": {
            "user_name": "admin",
            "access_key_id": access_key_id,
            "secret_access_key": secret_access_key,
        },
        "stats": {"enabled": False, "address": _NOWHERE},
        "email_subscription": {"enabled": False},
        "security": {"check_latest_version": False, "audit_check_url": _NOWHERE + "audit"},
    }
    import yaml  # lazily: `scripts/dev` imports this package with the system Python, before the venv exists

    config_path = base_dir / "lakefs.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    config_path.chmod(0o600)
    log_path = base_dir / "lakefs.log"
    started = time.monotonic()
    if database is not None:
        subprocess.run(
            [str(binary), "setup", "-c", str(config_path), "--user-name", "admin", "--access-key-id", access_key_id,
             "--secret-access-key", secret_access_key, "--no-check"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    proc = start_process([str(binary), "run", "-c", str(config_path)], log_path=base_dir / "lakefs.stdout.log")
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_http_ok(f"{endpoint}/_health", timeout_s=_LAKEFS_START_TIMEOUT_S, process=proc, log_path=log_path)
    except BaseException:
        stop_pid(proc.pid)
        raise
    region = LakeFSRegion(
        name=name,
        endpoint=endpoint,
        access_key_id=access_key_id,
        secret_access_key=secret_access_key,
        blockstore=blockstore,
        namespace_root=namespace_root,
        base_dir=str(base_dir),
        pid=proc.pid,
        log_path=str(log_path),
        auth_secret_key=auth_secret,
        minio=minio,
        startup_seconds=time.monotonic() - started,
        database=database,
    )
    (base_dir / "region.json").write_text(json.dumps(region.to_json(), indent=2))
    return region
