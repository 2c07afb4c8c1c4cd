"""The replication config's defaults: those the reference documents, the example file that shows them, and the
round trip through ``as_dict``."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from lakefs_mirror_dagster.config import (
    AuthApiConfig,
    AuthCacheConfig,
    CommitSensorConfig,
    HooksConfig,
    LakeFSFrontConfig,
    LoggingConfig,
    MirrorsManagerConfig,
    S3Settings,
    SparkConfig,
    TransferConfig,
    ValidatorConfig,
    dump_example_config,
    load_config,
    parse_config,
)
from tests.config.config_data import MiB, config_full_of_secrets, minimal, multi, write_yaml

# ---------------------------------------------------------------------------------------------------------
# Defaults (values typed from the reference's "Configuration Reference" tables, not from the code)
# ---------------------------------------------------------------------------------------------------------


def test_documented_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    config = parse_config(minimal())

    assert config.organization_name == ""
    assert config.listen_address == "0.0.0.0:8008"
    assert config.list_mirrors_page_size == 1000
    assert config.list_repositories_page_size == 1000
    assert (config.logging.level, config.logging.format) == ("INFO", "text")
    assert config.logging.python_level == logging.INFO

    sensor = config.commit_sensor
    assert sensor.process_branches_duration == timedelta(minutes=1)
    assert sensor.branches_scanner_concurrency_limit == 10
    assert sensor.list_branch_page_size == 1000
    assert sensor.log_commit_page_size == 1000
    assert config.mirrors_manager.process_mirrors_interval_duration == timedelta(seconds=20)
    validator = config.validator
    assert validator.run_interval == timedelta(minutes=1)
    assert validator.num_workers == 3
    assert validator.cooldown_on_missing == timedelta(minutes=1)
    assert validator.cooldown_on_error == timedelta(minutes=1)

    assert (config.lakefs_front.enabled, config.lakefs_front.timeout) == (False, timedelta(minutes=5))
    assert config.auth.api.endpoint == ""
    assert config.auth.cache.enabled is False
    # The reference leaves size/ttl blank; lakeFS's own auth cache defaults are 1024 entries and 20s.
    assert (config.auth.cache.size, config.auth.cache.ttl) == (1024, timedelta(seconds=20))

    assert config.transfer.concurrency == "auto"
    assert config.transfer.multipart_threshold == 128 * MiB
    assert config.transfer.multipart_chunk_size == 16 * MiB
    assert config.transfer.strict_full_addresses is False
    assert config.transfer.mode == "copy"
    assert config.spark.master == "local[*]"
    assert dict(config.spark.conf) == {}
    assert dict(config.source_stores) == {}
    assert dict(config.region_credentials) == {}

    assert config.mirrors_database.type == "sqlite"
    assert config.mirrors_database.sqlite.path == str(tmp_path / ".lakefs-mirror" / "mirrors.db")


def test_s3_and_local_defaults_follow_lakefs() -> None:
    config = parse_config(minimal(blockstore={"type": "S3"}))
    assert config.blockstore is not None
    assert config.blockstore.type == "s3"  # type names are case-insensitive, stored canonical
    s3 = config.blockstore.s3
    assert (s3.region, s3.endpoint, s3.force_path_style) == ("us-east-1", "", False)
    assert config.blockstore.settings is s3

    local = parse_config(minimal(blockstore={"type": "local", "local": {"path": "/data/block"}}))
    assert local.blockstore is not None
    assert local.blockstore.settings.path == "/data/block"  # type: ignore[union-attr]


def test_config_is_frozen() -> None:
    config = parse_config(minimal())
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.region = "elsewhere"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------------------
# Example file and round trip
# ---------------------------------------------------------------------------------------------------------


def test_example_config_loads_and_shows_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    text = dump_example_config()
    config = load_config(write_yaml(tmp_path / "example.yaml", text), env={})
    # The example promises "every setting at its default": keep it honest against the schema.
    assert config.logging == LoggingConfig()
    assert config.commit_sensor == CommitSensorConfig()
    assert config.mirrors_manager == MirrorsManagerConfig()
    assert config.validator == ValidatorConfig()
    assert config.transfer == TransferConfig()
    assert config.spark == SparkConfig()
    assert config.auth.cache == AuthCacheConfig() and config.auth.api == AuthApiConfig()
    assert config.blockstore is not None and config.blockstore.s3 == S3Settings()
    assert config.mirrors_database == parse_config(minimal()).mirrors_database
    assert config.listen_address == "0.0.0.0:8008"
    assert config.lakefs_front == LakeFSFrontConfig()
    assert config.hooks == HooksConfig()
    assert text.count("\n") > 50 and "# blockstores:" in text and "# source_stores:" in text


def test_commented_blockstores_example_is_valid() -> None:
    lines = dump_example_config().splitlines()
    start = lines.index("# blockstores:")
    block = []
    for line in lines[start:]:
        if not line.startswith("#"):
            break
        block.append(line[2:])
    config = parse_config(multi("\n".join(block), verbatim=True))
    assert [s.id for s in config.stores] == ["minio-prod", "archive"]
    assert config.store_by_id("").id == "minio-prod"


def test_as_dict_round_trips() -> None:
    config = config_full_of_secrets()
    assert parse_config(config.as_dict(reveal_secrets=True)) == config
    plain = parse_config(minimal(commit_sensor={"process_branches_duration": "1h30m"}))
    data = plain.as_dict()
    assert data["commit_sensor"]["process_branches_duration"] == "1h30m"
    assert "blockstores" not in data  # unset alternatives are left out, so the dict loads again
    assert yaml.safe_load(yaml.safe_dump(data))["region"] == "us-east-1"
