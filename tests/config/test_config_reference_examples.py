"""The configuration reference's own examples load as written (single and multi-store, one and two regions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakefs_mirror_dagster.config import ConfigError, S3Settings, load_config, parse_config
from tests.config.config_data import (
    MULTI_STORE_MULTI_CLOUD,
    MULTI_STORE_ON_PREM,
    error_of,
    minimal,
    multi,
    without,
    write_yaml,
)

REFERENCE_SOURCE_REGION = """
region: "us-east-1"
organization_id: "my-org"
regional_endpoint: "http://lakefs-source.mirroring.svc.cluster.local:80"
dst_endpoints:
  us-west-2: "http://lakefs-dest-internal.example.com:80"
mirrors_database:
  type: dynamodb
  dynamodb:
    table_name: my-replication-table
    aws_region: us-east-1
blockstore:
  type: s3
  s3:
    region: us-east-1
auth:
  encrypt:
    secret_key: "<shared-secret>"
logging:
  level: INFO
lakefs:
  access_key_id: AKIAREPLICATOR
  secret_access_key: replicator-secret
"""


def test_organization_name_builds_the_lakefs_cloud_endpoint_and_is_refused_beside_one() -> None:
    cloud = parse_config(without(minimal(organization_name="acme"), "regional_endpoint"))
    assert cloud.regional_endpoint == "https://acme.us-east-1.lakefscloud.io"
    from_env = parse_config(without(minimal(), "regional_endpoint"), env={"REPLICATION_ORGANIZATION_NAME": "acme"})
    assert from_env.endpoint_for("us-east-1") == "https://acme.us-east-1.lakefscloud.io"
    both = error_of(minimal(organization_name="acme"))
    assert both.path == "organization_name" and "regional_endpoint is set" in str(both)
    bad = error_of(without(minimal(organization_name="Acme Corp"), "regional_endpoint"))
    assert bad.path == "organization_name" and "DNS label" in str(bad)
    assert parse_config(minimal(organization_name="")).regional_endpoint == "http://lakefs-east:8000"


def test_reference_two_region_example_with_postgres(tmp_path: Path) -> None:
    text = REFERENCE_SOURCE_REGION.replace(
        "  type: dynamodb\n  dynamodb:\n    table_name: my-replication-table\n    aws_region: us-east-1\n",
        "  type: postgres\n  postgres:\n    connection_string: postgres://repl:pw@db:5432/mirrors\n",
    )
    config = load_config(write_yaml(tmp_path / "c.yaml", text), env={})
    assert config.region == "us-east-1"
    assert config.endpoint_for("us-west-2") == "http://lakefs-dest-internal.example.com:80"
    assert config.endpoint_for("us-east-1") == "http://lakefs-source.mirroring.svc.cluster.local:80"
    assert config.mirrors_database.type == "postgres"


REFERENCE_DESTINATION_REGION = """
region: "us-west-2"
organization_id: "my-org"
regional_endpoint: "http://lakefs-dest.mirroring.svc.cluster.local:80"
dst_endpoints:
  us-east-1: "http://lakefs-source-internal.example.com:80"
mirrors_database:
  type: dynamodb
  dynamodb:
    table_name: my-replication-table
    aws_region: us-west-2
blockstore:
  type: s3
  s3:
    region: us-west-2
auth:
  encrypt:
    secret_key: "<shared-secret>"
logging:
  level: INFO
lakefs:
  access_key_id: AKIAREPLICATOR
  secret_access_key: replicator-secret
"""


def test_reference_dynamodb_mirrors_database_loads(tmp_path: Path) -> None:
    """Both regions of the reference's two-region example: one DynamoDB table, each region signing for its own
    AWS region (its replica of the global table)."""
    source = load_config(write_yaml(tmp_path / "east.yaml", REFERENCE_SOURCE_REGION), env={})
    destination = load_config(write_yaml(tmp_path / "west.yaml", REFERENCE_DESTINATION_REGION), env={})
    for config, aws_region in ((source, "us-east-1"), (destination, "us-west-2")):
        database = config.mirrors_database
        assert database.type == "dynamodb"
        assert database.dynamodb.table_name == "my-replication-table"
        assert database.dynamodb.aws_region == aws_region
        assert database.dynamodb.endpoint == ""  # AWS's own endpoint
    assert destination.endpoint_for("us-east-1") == "http://lakefs-source-internal.example.com:80"


def test_helm_values_file_gets_a_hint(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "values.yaml", "replication:\n  enabled: true\n  config:\n    region: x\n")
    with pytest.raises(ConfigError, match=r"^replication: unknown key: .*replication\.config"):
        load_config(path, env={})


def test_the_reference_examples_verbatim_are_refused_at_their_lakefs_only_keys() -> None:
    err = error_of(multi(MULTI_STORE_ON_PREM, verbatim=True))
    assert err.path == "blockstores.signing" and "links none through lakeFS" in str(err)
    assert "some-secret" not in str(err)  # the refused secret is not shown


def test_reference_multi_store_examples_parse() -> None:
    config = parse_config(multi(MULTI_STORE_ON_PREM))
    assert [s.id for s in config.stores] == ["minio-prod", "minio-backup"]
    backup = config.store_by_id("minio-backup")
    assert backup.description == "Backup MinIO storage for disaster recovery"
    assert isinstance(backup.settings, S3Settings)
    assert backup.settings.endpoint == "http://minio-backup.local"
    assert backup.settings.force_path_style is True
    assert backup.settings.credentials.secret_access_key.reveal() == "backup_secret_key"

    cloud = parse_config(multi(MULTI_STORE_MULTI_CLOUD))
    azure = cloud.store_by_id("azure-analytics")
    assert azure.type == "azure"
    assert azure.azure.storage_account == "analytics-account"
    assert cloud.store_by_id("s3-prod").s3.region == "us-east-1"


def test_single_blockstore_is_one_backward_compatible_store_with_empty_id() -> None:
    config = parse_config(minimal())
    (store,) = config.stores
    assert (store.id, store.backward_compatible, store.type) == ("", True, "s3")
    assert config.store_by_id("") == store
    assert config.default_store == store
    with pytest.raises(ConfigError, match="single blockstore"):
        config.store_by_id("minio-prod")
