"""Fixtures shared by the config tests: a replication config file on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.config_data import write_yaml

FILE = """
region: us-east-1
organization_id: my-org
regional_endpoint: http://lakefs-east:8000/
dst_endpoints:
  us-west-2: https://lakefs-west.example.com
  eu-central-1: https://lakefs-eu.example.com
blockstore:
  type: local
  local:
    path: /srv/lakefs/block
auth:
  encrypt:
    secret_key: file-secret
lakefs:
  access_key_id: AKIAFILE
  secret_access_key: file-lakefs-secret
spark:
  conf:
    spark.executor.memory: 4g
    spark.executor.cores: 2
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "replication.yaml", FILE)
