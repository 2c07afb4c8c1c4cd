"""Names the reference uses that are not ``REPLICATION_*`` fields: its Kubernetes secret's keys (which become
environment variables of exactly those names) and ``refstore_database``."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.config import ConfigError, parse_config
from tests.config.config_data import minimal, without


def _without_secrets() -> dict[str, object]:
    return without(without(minimal(), "lakefs"), "auth.encrypt.secret_key")


def test_the_reference_secret_names_fill_the_credentials_and_the_encryption_key() -> None:
    env = {
        "source_lakefs_access_key_id": "AKIAFROMSECRET",
        "source_lakefs_secret_access_key": "secret-from-k8s",
        "auth_encrypt_secret_key": "encrypt-from-k8s",
    }
    config = parse_config(_without_secrets(), env=env)
    assert config.lakefs.access_key_id == "AKIAFROMSECRET"
    assert config.lakefs.secret_access_key.reveal() == "secret-from-k8s"
    assert config.auth.encrypt.secret_key.reveal() == "encrypt-from-k8s"
    assert "secret-from-k8s" not in repr(config)


def test_upper_case_spelling_works_and_replication_variables_win() -> None:
    env = {
        "AUTH_ENCRYPT_SECRET_KEY": "from-reference-name",
        "source_lakefs_access_key_id": "AKIAFROMSECRET",
        "REPLICATION_LAKEFS_ACCESS_KEY_ID": "AKIAEXPLICIT",
        "source_lakefs_secret_access_key": "s",
    }
    config = parse_config(_without_secrets(), env=env)
    assert config.auth.encrypt.secret_key.reveal() == "from-reference-name"
    assert config.lakefs.access_key_id == "AKIAEXPLICIT"


def test_without_them_the_missing_secret_is_still_named() -> None:
    env = {"source_lakefs_access_key_id": "A", "source_lakefs_secret_access_key": "s"}
    with pytest.raises(ConfigError, match=r"auth\.encrypt\.secret_key"):
        parse_config(_without_secrets(), env=env)


def test_refstore_database_is_lakefs_database_section() -> None:
    lakefs_style = {"type": "postgres", "postgres": {"connection_string": "postgres://u:p@db:5432/lakefs"}}
    config = parse_config(minimal(refstore_database=lakefs_style))
    assert config.refstore_database is not None
    assert config.refstore_database.postgres.connection_string.reveal() == "postgres://u:p@db:5432/lakefs"
    assert "u:p@" not in repr(config)
    assert parse_config(minimal()).refstore_database is None
    dynamodb = parse_config(minimal(refstore_database={"type": "dynamodb", "dynamodb": {"aws_region": "us-east-1"}}))
    assert dynamodb.refstore_database is not None and dynamodb.refstore_database.type == "dynamodb"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"type": "local", "local": {"path": "/tmp/x"}}, r"refstore_database\.local.*cannot be written from outside"),
        ({"type": "postgres"}, r"refstore_database\.postgres\.connection_string.*required"),
    ],
)
def test_a_refstore_database_that_cannot_be_written_is_refused(section: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(minimal(refstore_database=section))
