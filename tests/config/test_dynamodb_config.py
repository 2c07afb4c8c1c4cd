"""``mirrors_database.type: dynamodb``: the fields lakeFS's ``database.dynamodb`` names, the errors a user sees
for bad values, and the environment variables that set them."""

from __future__ import annotations

from typing import Any

import pytest

from lakefs_mirror_dagster.config import ConfigError, parse_config


def config_with(dynamodb: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    database: dict[str, Any] = {"type": "dynamodb"}
    if dynamodb is not None:
        database["dynamodb"] = dynamodb
    return {
        "region": "us-east-1",
        "organization_id": "my-org",
        "regional_endpoint": "http://lakefs-east:8000",
        "blockstore": {"type": "s3", "s3": {"region": "us-east-1"}},
        "auth": {"encrypt": {"secret_key": "auth-secret"}},
        "lakefs": {"access_key_id": "AKIAREPLICATOR", "secret_access_key": "replicator-secret"},
        "mirrors_database": database,
        **extra,
    }


def test_every_field_is_read_and_the_secret_key_is_redacted() -> None:
    config = parse_config(
        config_with(
            {
                "table_name": "lakefs-replication-table",
                "aws_region": "eu-central-1",
                "endpoint": "http://127.0.0.1:8000/",
                "aws_access_key_id": "AKIADYNAMO",
                "aws_secret_access_key": "dynamo-Sekr1t",
            }
        ),
        env={},
    )
    settings = config.mirrors_database.dynamodb
    assert (settings.table_name, settings.aws_region, settings.endpoint) == (
        "lakefs-replication-table",
        "eu-central-1",
        "http://127.0.0.1:8000",
    )
    assert settings.aws_access_key_id == "AKIADYNAMO"
    assert settings.aws_secret_access_key.reveal() == "dynamo-Sekr1t"
    assert "dynamo-Sekr1t" not in repr(config) and "dynamo-Sekr1t" not in str(config.as_dict())


def test_environment_variables_set_the_fields() -> None:
    config = parse_config(
        config_with(None),
        env={
            "REPLICATION_MIRRORS_DATABASE_DYNAMODB_TABLE_NAME": "from-env",
            "REPLICATION_MIRRORS_DATABASE_DYNAMODB_AWS_PROFILE": "replication",
        },
    )
    assert config.mirrors_database.dynamodb.table_name == "from-env"
    assert config.mirrors_database.dynamodb.aws_profile == "replication"


@pytest.mark.parametrize(
    ("dynamodb", "path", "fragment"),
    [
        (None, "mirrors_database.dynamodb.table_name", "required when mirrors_database.type is dynamodb"),
        ({"table_name": "ab"}, "mirrors_database.dynamodb.table_name", "3 to 255"),
        ({"table_name": "my table"}, "mirrors_database.dynamodb.table_name", "invalid DynamoDB table name"),
        ({"table_name": "t-1", "aws_region": "US East"}, "mirrors_database.dynamodb.aws_region", "us-east-1"),
        ({"table_name": "t-1", "endpoint": "localhost:8000"}, "mirrors_database.dynamodb.endpoint", "http://"),
        (
            {"table_name": "t-1", "aws_access_key_id": "AKIA"},
            "mirrors_database.dynamodb.aws_secret_access_key",
            "required when aws_access_key_id is set",
        ),
        (
            {"table_name": "t-1", "aws_secret_access_key": "s"},
            "mirrors_database.dynamodb.aws_access_key_id",
            "required when aws_secret_access_key is set",
        ),
        (
            {"table_name": "t-1", "aws_profile": "p", "aws_access_key_id": "AKIA", "aws_secret_access_key": "s"},
            "mirrors_database.dynamodb.aws_profile",
            "not both",
        ),
        ({"table_name": "t-1", "scan_limit": 1024}, "mirrors_database.dynamodb.scan_limit", "does not use"),
        ({"table_nmae": "t-1"}, "mirrors_database.dynamodb.table_nmae", "did you mean 'table_name'?"),
    ],
)
def test_bad_values_name_the_field(dynamodb: dict[str, Any] | None, path: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(config_with(dynamodb), env={})
    assert info.value.path == path
    assert fragment in str(info.value)


def test_an_unsupported_database_type_lists_dynamodb() -> None:
    data = config_with({"table_name": "t-1"})
    data["mirrors_database"]["type"] = "cosmosdb"
    with pytest.raises(ConfigError, match="sqlite, postgres, dynamodb") as info:
        parse_config(data, env={})
    assert info.value.path == "mirrors_database.type"


def test_a_dynamodb_database_has_no_sqlalchemy_url() -> None:
    config = parse_config(config_with({"table_name": "t-1"}), env={})
    with pytest.raises(ValueError, match="no SQLAlchemy URL"):
        _ = config.mirrors_database.sqlalchemy_url
