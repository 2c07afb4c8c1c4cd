"""The errors users see: missing, unknown and bad values named by their dotted path, bad files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakefs_mirror_dagster.config import ConfigError, load_config, parse_config
from tests.config.config_data import error_of, minimal, without, write_yaml


@pytest.mark.parametrize(
    ("dotted", "env_var"),
    [
        ("region", "REPLICATION_REGION"),
        ("organization_id", "REPLICATION_ORGANIZATION_ID"),
        ("regional_endpoint", "REPLICATION_REGIONAL_ENDPOINT"),
        ("auth.encrypt.secret_key", "REPLICATION_AUTH_ENCRYPT_SECRET_KEY"),
        ("auth", "REPLICATION_AUTH_ENCRYPT_SECRET_KEY"),  # whole section missing: name the leaf
    ],
)
def test_missing_required_field(dotted: str, env_var: str) -> None:
    err = error_of(without(minimal(), dotted))
    assert err.path == ("auth.encrypt.secret_key" if dotted == "auth" else dotted)
    assert "required field is missing" in str(err)
    assert env_var in str(err)


def test_missing_lakefs_credentials_names_the_regions() -> None:
    err = error_of(without(minimal(), "lakefs"))
    assert err.path == "lakefs.access_key_id"
    assert "us-east-1, us-west-2" in str(err)
    # Per-region credentials for every region are an alternative.
    creds = {"access_key_id": "A", "secret_access_key": "S"}
    config = parse_config(without(minimal(region_credentials={"us-east-1": creds, "us-west-2": creds}), "lakefs"))
    assert config.credentials_for("us-west-2") == ("A", "S")


def test_half_set_credentials() -> None:
    err = error_of(minimal(lakefs={"access_key_id": "AKIA"}))
    assert err.path == "lakefs.secret_access_key"
    err = error_of(minimal(blockstore={"type": "s3", "s3": {"credentials": {"secret_access_key": "x"}}}))
    assert err.path == "blockstore.s3.credentials.access_key_id"


@pytest.mark.parametrize(
    ("data", "path", "suggestion"),
    [
        ({"regoin": "x"}, "regoin", "'region'"),
        ({"commit_sensor": {"process_branch_duration": "1m"}}, "commit_sensor.process_branch_duration", None),
        ({"validator": {"numworkers": 3}}, "validator.numworkers", "'num_workers'"),
        (
            {"blockstore": {"type": "s3", "s3": {"endpoint_url": "http://x"}}},
            "blockstore.s3.endpoint_url",
            "'endpoint'",
        ),
        (
            {"source_stores": {"us-west-2": {"type": "s3", "s3": {"regin": "x"}}}},
            "source_stores.us-west-2.s3.regin",
            "'region'",
        ),
        (
            {"blockstore": {"type": "s3", "s3": {"pre_signed_expiry": "15m"}}},
            "blockstore.s3.pre_signed_expiry",
            None,
        ),
    ],
)
def test_unknown_keys_anywhere(data: dict[str, Any], path: str, suggestion: str | None) -> None:
    err = error_of(minimal(**data))
    assert "unknown key" in str(err)
    assert err.path == path
    if suggestion is not None:
        assert f"did you mean {suggestion}?" in str(err)


def test_unknown_key_is_reported_before_the_missing_field_it_caused() -> None:
    data = without(minimal(), "organization_id")
    data["organisation_id"] = "my-org"
    err = error_of(data)
    assert err.path == "organisation_id"
    assert "did you mean 'organization_id'?" in str(err)


def test_unknown_key_without_close_match_lists_valid_keys() -> None:
    err = error_of(minimal(logging={"colour": "blue"}))
    assert err.path == "logging.colour"
    assert "valid keys here: level, format" in str(err)


@pytest.mark.parametrize(
    ("data", "path", "fragment"),
    [
        ({"regional_endpoint": "lakefs:8000"}, "regional_endpoint", "not an http:// or https:// URL"),
        ({"dst_endpoints": {"us-west-2": "ftp://x"}}, "dst_endpoints.us-west-2", "not an http"),
        ({"dst_endpoints": {"us west": "http://x"}}, 'dst_endpoints["us west"]', "invalid region name"),
        ({"region": "us east"}, "region", "invalid region name"),
        ({"listen_address": "8008"}, "listen_address", "host:port"),
        ({"list_mirrors_page_size": 0}, "list_mirrors_page_size", "at least 1"),
        ({"list_repositories_page_size": "many"}, "list_repositories_page_size", "whole number"),
        (
            {"commit_sensor": {"process_branches_duration": "0s"}},
            "commit_sensor.process_branches_duration",
            "positive",
        ),
        ({"validator": {"cooldown_on_error": "-1s"}}, "validator.cooldown_on_error", "at least 0s"),
        ({"mirrors_manager": {"process_mirrors_interval_duration": 20}}, "mirrors_manager", "missing unit"),
        ({"auth": {"encrypt": {"secret_key": 1234}}}, "auth.encrypt.secret_key", "quote the value"),
        ({"auth": {"encrypt": {"secret_key": "  "}}}, "auth.encrypt.secret_key", "must not be empty"),
        ({"organization_id": 42}, "organization_id", "expected a string"),
        (
            {"auth": {"encrypt": {"secret_key": "k"}, "api": {"endpoint": "http://auth:8000"}}},
            "auth.api.endpoint",
            "authenticates API callers against the region's lakeFS itself",
        ),
        (
            {"auth": {"encrypt": {"secret_key": "k"}, "cache": {"enabled": "maybe"}}},
            "auth.cache.enabled",
            "true or",
        ),
        ({"lakefs_front": {"enabled": "yes please"}}, "lakefs_front.enabled", "true or"),
        ({"lakefs_front": {"timeout": "0s"}}, "lakefs_front.timeout", "positive"),
        (
            {"lakefs_front": {"enabled": True}, "regional_endpoint": "http://gw:80/lakefs"},
            "lakefs_front.enabled",
            "without a path",
        ),
        ({"hooks": {"poll_interval": "10ms"}}, "hooks.poll_interval", "at least 50ms"),
        ({"hooks": {"sensor_wait": "1m"}}, "hooks.sensor_wait", "between 0s and 30s"),
        ({"logging": {"format": "xml"}}, "logging.format", "text, json"),
        ({"transfer": {"mode": "mirror"}}, "transfer.mode", "copy, external"),
        ({"transfer": {"multipart_chunk_size": "4MiB"}}, "transfer.multipart_chunk_size", "5 MiB"),
        ({"transfer": {"multipart_threshold": "64M"}}, "transfer.multipart_threshold", "ambiguous"),
        ({"transfer": {"concurrency": True}}, "transfer.concurrency", "whole number"),
        (
            {"mirrors_database": {"type": "postgres"}},
            "mirrors_database.postgres.connection_string",
            "required when",
        ),
        ({"blockstore": {"type": "s3", "s3": {"server_side_encryption": "aes"}}}, "blockstore.s3", "AES256"),
        ({"spark": {"conf": ["a"]}}, "spark.conf", "expected a mapping"),
        ({"logging": "INFO"}, "logging", "expected a section"),
        (
            {"region_credentials": {"mars": {"access_key_id": "a", "secret_access_key": "b"}}},
            "region_credentials.mars",
            "known regions: us-east-1, us-west-2",
        ),
        (
            {"source_stores": {"us-wset-2": {"type": "local"}}},
            "source_stores.us-wset-2",
            "did you mean 'us-west-2'?",
        ),
    ],
)
def test_bad_values_name_the_field(data: dict[str, Any], path: str, fragment: str) -> None:
    err = error_of(minimal(**data))
    assert err.path.startswith(path), str(err)
    assert fragment in str(err)
    assert str(err).startswith(err.path + ": ")


def test_yaml_problems(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml", env={})
    with pytest.raises(ConfigError, match=r"not valid YAML at line 2"):
        load_config(write_yaml(tmp_path / "bad.yaml", "region: x\n  organization_id: [\n"), env={})
    with pytest.raises(ConfigError, match="duplicate key 'blockstore'"):
        load_config(write_yaml(tmp_path / "dup.yaml", "blockstore: {type: s3}\nblockstore: {type: local}\n"), env={})
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(write_yaml(tmp_path / "list.yaml", "- a\n- b\n"), env={})


def test_file_errors_say_which_file(config_file: Path) -> None:
    text = config_file.read_text().replace("num_workers", "x") + "validator:\n  num_workers: -2\n"
    with pytest.raises(ConfigError) as info:
        load_config(write_yaml(config_file, text), env={})
    assert info.value.path == "validator.num_workers"
    assert f"in config file {config_file}" in str(info.value)


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)
