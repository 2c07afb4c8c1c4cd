"""Shared config data for the config tests (and others that need a valid config): the smallest valid config,
the reference's multi-store examples, a config full of secrets, and small helpers over them."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from lakefs_mirror_dagster.config import ConfigError, ReplicationConfig, parse_config

MiB = 1024 * 1024


def minimal(**extra: Any) -> dict[str, Any]:
    """The smallest valid config: only what the reference lists as required (plus our lakeFS credentials)."""
    data: dict[str, Any] = {
        "region": "us-east-1",
        "organization_id": "my-org",
        "regional_endpoint": "http://lakefs-east:8000",
        "dst_endpoints": {"us-west-2": "https://lakefs-west.example.com"},
        "blockstore": {"type": "s3", "s3": {"region": "us-east-1"}},
        "auth": {"encrypt": {"secret_key": "auth-secret"}},
        "lakefs": {"access_key_id": "AKIAREPLICATOR", "secret_access_key": "replicator-secret"},
    }
    data.update(extra)
    return data


def write_yaml(path: Path, text: str) -> Path:
    """Write ``text`` (dedented, so it may be indented in the test) as a config file at ``path``."""
    path.write_text(textwrap.dedent(text))
    return path


def error_of(data: dict[str, Any], env: dict[str, str] | None = None) -> ConfigError:
    """The ConfigError parsing ``data`` must raise, for the test to read its path and message."""
    with pytest.raises(ConfigError) as info:
        parse_config(data, env=env)
    return info.value


def without(data: dict[str, Any], dotted: str) -> dict[str, Any]:
    """``data`` with the key at the dotted path removed (in place), to provoke a missing-field error."""
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]
    return data


MULTI_STORE_ON_PREM = """
blockstores:
  signing:
    secret_key: "some-secret"
  stores:
    - id: "minio-prod"
      description: "Primary on-prem MinIO storage for production data"
      type: "s3"
      s3:
        force_path_style: true
        endpoint: 'http://minio-prod.local'
        discover_bucket_region: false
        credentials:
          access_key_id: "prod_access_key"
          secret_access_key: "prod_secret_key"
    - id: "minio-backup"
      description: "Backup MinIO storage for disaster recovery"
      type: "s3"
      s3:
        force_path_style: true
        endpoint: 'http://minio-backup.local'
        discover_bucket_region: false
        credentials:
          access_key_id: "backup_access_key"
          secret_access_key: "backup_secret_key"
"""

MULTI_STORE_MULTI_CLOUD = """
blockstores:
  signing:
    secret_key: "some-secret"
  stores:
    - id: "s3-prod"
      description: "AWS S3 storage for production data"
      type: "s3"
      s3:
        region: "us-east-1"
    - id: "azure-analytics"
      description: "Azure Blob storage for analytics data"
      type: "azure"
      azure:
        storage_account: "analytics-account"
        storage_access_key: "EXAMPLE45551FSAsVVCXCF"
"""


def multi(blockstores_yaml: str, *, verbatim: bool = False, **extra: Any) -> dict[str, Any]:
    """A config with the reference's ``blockstores`` example; without ``verbatim``, less the lakeFS settings the
    replication config refuses (``signing``, ``s3.discover_bucket_region``)."""
    data = minimal(**extra)
    del data["blockstore"]
    data.update(yaml.safe_load(blockstores_yaml))
    if not verbatim:
        data["blockstores"].pop("signing", None)
        for store in data["blockstores"]["stores"]:
            store.get("s3", {}).pop("discover_bucket_region", None)
    return data



SECRETS = [
    "auth-Sekr1t-value",
    "lakefs-Sekr1t-value",
    "s3-Sekr1t-value",
    "token-Sekr1t-value",
    "pgpass-Sekr1t-value",
    "gs-Sekr1t-value",
    "azure-Sekr1t-value",
    "west-Sekr1t-value",
    "source-Sekr1t-value",
]


def config_full_of_secrets() -> ReplicationConfig:
    """A config holding each of ``SECRETS`` in a secret field, so redaction and round trips cover them all."""
    data = minimal(
        auth={"encrypt": {"secret_key": SECRETS[0]}},
        lakefs={"access_key_id": "AKIA", "secret_access_key": SECRETS[1]},
        mirrors_database={
            "type": "postgres",
            "postgres": {"connection_string": f"postgres://repl:{SECRETS[4]}@db:5432/mirrors"},
        },
        region_credentials={"us-west-2": {"access_key_id": "AKIAW", "secret_access_key": SECRETS[7]}},
        source_stores={
            "us-west-2": {
                "type": "s3",
                "s3": {"credentials": {"access_key_id": "K", "secret_access_key": SECRETS[8]}},
            }
        },
    )
    del data["blockstore"]
    data["blockstores"] = {
        "stores": [
            {
                "id": "main",
                "type": "s3",
                "backward_compatible": True,
                "s3": {
                    "credentials": {
                        "access_key_id": "K",
                        "secret_access_key": SECRETS[2],
                        "session_token": SECRETS[3],
                    }
                },
            },
            {
                "id": "az",
                "type": "azure",
                "azure": {"storage_account": "acct", "storage_access_key": SECRETS[6]},
            },
            {"id": "gcs", "type": "gs", "gs": {"credentials_json": SECRETS[5]}},
        ],
    }
    return parse_config(data)
