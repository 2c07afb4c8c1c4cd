"""The connection of an S3 blockstore: its settings checked, its credentials found, its boto3 client and its obstore
requests (``s3_native``) built, so ``S3Blockstore`` (``s3``) only sends requests.
"""

from __future__ import annotations

import os
import threading
import urllib.request
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.loaders
import botocore.session

from .checksums import S3_MIN_PART_SIZE
from .errors import StorageConfigError
from .s3_native import NativeS3Requests

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "DEFAULT_MULTIPART_CHUNK_SIZE",
    "DEFAULT_MULTIPART_THRESHOLD",
    "MAX_PARTS",
    "MIN_PART_SIZE",
    "MiB",
    "botocore_session",
    "check_settings",
    "connect",
    "endpoint_identity",
    "uses_proxy",
    "warm_s3_models",
]

MiB = 1024 * 1024
#: S3's smallest allowed part (all parts but the last).
MIN_PART_SIZE = S3_MIN_PART_SIZE
#: S3's largest number of parts in one multipart upload.
MAX_PARTS = 10_000
DEFAULT_MULTIPART_THRESHOLD = 16 * MiB
DEFAULT_MULTIPART_CHUNK_SIZE = 8 * MiB


_LOADER: botocore.loaders.Loader | None = None
_LOADER_LOCK = threading.Lock()


def botocore_session(profile: str | None = None, credentials_file: str | None = None) -> botocore.session.Session:
    """A new botocore session sharing this process's one data loader: botocore parses its endpoint and S3
    models (JSON, about a CPU second) once per loader, and every Dagster run and sync builds its stores anew.

    ``credentials_file`` is set before anything reads the AWS files (botocore caches them), so a ``profile`` found
    only there counts; a profile in neither file is refused here, by name, rather than by botocore's first call."""
    global _LOADER
    core = botocore.session.Session()
    if credentials_file:
        core.set_config_variable("credentials_file", os.path.expanduser(credentials_file))
    if profile:
        if profile not in core.available_profiles:
            files = [core.get_config_variable("config_file"), core.get_config_variable("credentials_file")]
            raise StorageConfigError(
                f"s3 blockstore: profile {profile!r} not found in the AWS config or credentials files "
                f"({', '.join(os.path.expanduser(f) for f in files)})"
            )
        core.set_config_variable("profile", profile)
    with _LOADER_LOCK:
        if _LOADER is None:
            _LOADER = botocore.loaders.create_loader(core.get_config_variable("data_path"))
    core.register_component("data_loader", _LOADER)
    return core


def warm_s3_models() -> None:
    """Parse what building an S3 client reads (no request is sent), so processes forked afterwards
    (``orchestration/launcher.py``) start with it parsed."""
    botocore_session().create_client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")


def endpoint_identity(endpoint: str | None, region: str | None) -> str:
    """A comparable identity of the S3 service: same value means objects can be copied server-side."""
    if not endpoint:
        region = region or ""
        partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if "gov" in region else "aws"
        return f"aws:{partition}"
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}{parts.path.rstrip('/')}"


def uses_proxy(endpoint_url: str) -> bool:
    """Whether the environment sends requests to ``endpoint_url`` through a proxy (then boto3 keeps them)."""
    parts = urlsplit(endpoint_url)
    proxies = urllib.request.getproxies()
    return bool(proxies.get(parts.scheme)) and not urllib.request.proxy_bypass(parts.hostname or "")


def check_settings(
    *,
    endpoint: str | None,
    access_key_id: str | None,
    secret_access_key: str | None,
    session_token: str | None,
    multipart_threshold: int,
    multipart_chunk_size: int,
    max_attempts: int,
    server_side_encryption: str | None,
    sse_kms_key_id: str | None,
) -> None:
    """Refuse, by name, a setting no request could work with, before anything is built."""
    if endpoint:
        scheme = urlsplit(endpoint).scheme
        if scheme not in ("http", "https") or not urlsplit(endpoint).hostname:
            raise StorageConfigError(
                f"s3 blockstore: endpoint {endpoint!r} must be an http:// or https:// URL with a host"
            )
    if bool(access_key_id) != bool(secret_access_key):
        raise StorageConfigError(
            "s3 blockstore: give both access_key_id and secret_access_key, or neither "
            "(to use the default AWS credential chain)"
        )
    if session_token and not access_key_id:
        raise StorageConfigError("s3 blockstore: session_token needs access_key_id and secret_access_key")
    if multipart_chunk_size < MIN_PART_SIZE:
        raise StorageConfigError(
            f"s3 blockstore: multipart_chunk_size {multipart_chunk_size} is below S3's minimum part size "
            f"{MIN_PART_SIZE} (5 MiB)"
        )
    if multipart_threshold < 1:
        raise StorageConfigError(f"s3 blockstore: multipart_threshold must be positive, got {multipart_threshold}")
    if server_side_encryption not in (None, "", "AES256", "aws:kms"):
        raise StorageConfigError(
            f"s3 blockstore: server_side_encryption {server_side_encryption!r} must be AES256 or aws:kms"
        )
    if sse_kms_key_id and server_side_encryption != "aws:kms":
        raise StorageConfigError("s3 blockstore: sse_kms_key_id needs server_side_encryption 'aws:kms'")
    if max_attempts < 1:
        raise StorageConfigError(f"s3 blockstore: max_attempts must be at least 1, got {max_attempts}")


def connect(
    *,
    endpoint: str | None,
    region: str | None,
    access_key_id: str | None,
    secret_access_key: str | None,
    session_token: str | None,
    profile: str | None,
    credentials_file: str | None,
    force_path_style: bool,
    max_attempts: int,
    max_pool_connections: int,
    connect_timeout: float,
    read_timeout: float,
    verify_tls: bool,
    server_side_encryption: str | None,
    sse_kms_key_id: str | None,
) -> tuple[S3Client, NativeS3Requests | None]:
    """The thread-safe boto3 client of one store, and its obstore requests (object GET, PUT and HEAD, directory
    listings), or None where a proxy is configured: boto3 then sends everything, honouring the proxy settings."""
    config = botocore.config.Config(
        region_name=region,
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        s3={"addressing_style": "path" if force_path_style else "auto"},
        max_pool_connections=max_pool_connections,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        # Many S3-compatible stores reject the CRC trailers boto3 sends by default since 1.36.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    session = boto3.session.Session(
        aws_access_key_id=access_key_id or None,
        aws_secret_access_key=secret_access_key or None,
        aws_session_token=session_token or None,
        region_name=region,
        botocore_session=botocore_session(profile or None, credentials_file or None),
    )
    client: S3Client = session.client("s3", endpoint_url=endpoint, config=config, verify=None if verify_tls else False)
    if not access_key_id and session.get_credentials() is None:  # (botocore caches what the chain found)
        raise StorageConfigError(
            "s3 blockstore: no credentials: no access_key_id, and the AWS default chain (environment, "
            "shared files, container or instance role"
            + (f", profile {profile!r}" if profile else "")
            + ") found none"
        )
    if uses_proxy(client.meta.endpoint_url):
        return client, None
    put_headers = {"x-amz-server-side-encryption": server_side_encryption} if server_side_encryption else {}
    if sse_kms_key_id:
        put_headers["x-amz-server-side-encryption-aws-kms-key-id"] = sse_kms_key_id
    direct = NativeS3Requests(
        session,
        endpoint=endpoint,
        region=region,
        force_path_style=force_path_style,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        verify_tls=verify_tls,
        max_attempts=max_attempts,
        put_headers=put_headers,
    )
    return client, direct
