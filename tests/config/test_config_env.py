"""The config from a YAML file and ``REPLICATION_`` environment variables: overrides, maps, lists, env-only."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from lakefs_mirror_dagster.config import ConfigError, load_config
from tests.config.config_data import MiB, write_yaml


def test_yaml_file_is_read(config_file: Path) -> None:
    config = load_config(config_file, env={})
    assert config.regional_endpoint == "http://lakefs-east:8000"  # trailing slash dropped
    assert config.known_regions == ("us-east-1", "eu-central-1", "us-west-2")
    assert config.credentials_for("eu-central-1") == ("AKIAFILE", "file-lakefs-secret")
    # Spark conf values are strings even when YAML reads them as numbers.
    assert dict(config.spark.conf) == {"spark.executor.memory": "4g", "spark.executor.cores": "2"}


def test_env_overrides_yaml(config_file: Path) -> None:
    env = {
        "REPLICATION_REGION": "us-west-2",
        "REPLICATION_COMMIT_SENSOR_PROCESS_BRANCHES_DURATION": "1h30m",
        "REPLICATION_LAKEFS_ACCESS_KEY_ID": "AKIAENV",
        "REPLICATION_AUTH_ENCRYPT_SECRET_KEY": "env-secret",
        "REPLICATION_VALIDATOR_NUM_WORKERS": "7",
        "REPLICATION_TRANSFER_MULTIPART_THRESHOLD": "128MiB",
        "REPLICATION_AUTH_CACHE_ENABLED": "true",
        "REPLICATION_LOGGING_LEVEL": "warning",
        "REPLICATION_TRANSFER_MODE": "external",
        "UNRELATED": "ignored",
    }
    config = load_config(config_file, env=env)
    assert config.region == "us-west-2"
    assert config.commit_sensor.process_branches_duration == timedelta(hours=1, minutes=30)
    assert config.credentials_for("us-west-2") == ("AKIAENV", "file-lakefs-secret")
    assert config.auth.encrypt.secret_key.reveal() == "env-secret"
    assert config.validator.num_workers == 7
    assert config.transfer.multipart_threshold == 128 * MiB
    assert config.auth.cache.enabled is True
    assert config.logging.level == "WARN"
    assert config.transfer.mode == "external"
    # Own region now resolves to regional_endpoint even though dst_endpoints lists it too.
    assert config.endpoint_for("us-west-2") == "http://lakefs-east:8000"


def test_env_uses_os_environ_by_default(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLICATION_LIST_MIRRORS_PAGE_SIZE", "250")
    assert load_config(config_file).list_mirrors_page_size == 250


@pytest.mark.parametrize(
    "value",
    [
        '{"us-west-2": "http://west:8000", "ap-south-1": "http://south:8000"}',
        "us-west-2=http://west:8000, ap-south-1=http://south:8000",
    ],
)
def test_dst_endpoints_from_env_as_json_or_pairs(config_file: Path, value: str) -> None:
    config = load_config(config_file, env={"REPLICATION_DST_ENDPOINTS": value})
    assert dict(config.dst_endpoints) == {"us-west-2": "http://west:8000", "ap-south-1": "http://south:8000"}


def test_env_sets_one_key_of_a_known_map(config_file: Path) -> None:
    env = {
        "REPLICATION_DST_ENDPOINTS_US_WEST_2": "http://west-override:80",
        "REPLICATION_SPARK_CONF_SPARK_EXECUTOR_MEMORY": "8g",
    }
    config = load_config(config_file, env=env)
    assert config.dst_endpoints["us-west-2"] == "http://west-override:80"
    assert config.dst_endpoints["eu-central-1"] == "https://lakefs-eu.example.com"
    assert config.spark.conf["spark.executor.memory"] == "8g"


def test_region_credentials_from_env_use_known_region_names(config_file: Path) -> None:
    # REGION is a prefix of REGION_CREDENTIALS: the longest field name wins.
    env = {
        "REPLICATION_REGION_CREDENTIALS_EU_CENTRAL_1_ACCESS_KEY_ID": "AKIAEU",
        "REPLICATION_REGION_CREDENTIALS_EU_CENTRAL_1_SECRET_ACCESS_KEY": "eu-secret",
    }
    config = load_config(config_file, env=env)
    assert config.region == "us-east-1"
    assert config.credentials_for("eu-central-1") == ("AKIAEU", "eu-secret")
    assert config.credentials_for("us-west-2") == ("AKIAFILE", "file-lakefs-secret")


def test_env_can_replace_blockstore_with_blockstores_json_and_index_into_stores(config_file: Path) -> None:
    stores = '[{"id": "a", "type": "local", "backward_compatible": true}, {"id": "b", "type": "s3"}]'
    env = {
        "REPLICATION_BLOCKSTORES_STORES": stores,
        "REPLICATION_BLOCKSTORES_STORES_1_S3_ENDPOINT": "http://127.0.0.1:9000",
    }
    with pytest.raises(ConfigError, match="mutually exclusive"):
        load_config(config_file, env=env)  # the file still has blockstore
    text = config_file.read_text().replace("blockstore:\n  type: local\n  local:\n    path: /srv/lakefs/block\n", "")
    config = load_config(write_yaml(config_file, text), env=env)
    assert [s.id for s in config.stores] == ["a", "b"]
    assert config.store_by_id("b").s3.endpoint == "http://127.0.0.1:9000"
    assert config.store_by_id("").id == "a"


def test_config_entirely_from_env(tmp_path: Path) -> None:
    env = {
        "REPLICATION_REGION": "west",
        "REPLICATION_ORGANIZATION_ID": "org",
        "REPLICATION_REGIONAL_ENDPOINT": "http://127.0.0.1:8001/api/v1",
        "REPLICATION_DST_ENDPOINTS": "east=http://127.0.0.1:8002",
        "REPLICATION_BLOCKSTORE_TYPE": "s3",
        "REPLICATION_BLOCKSTORE_S3_ENDPOINT": "http://127.0.0.1:9000",
        "REPLICATION_BLOCKSTORE_S3_FORCE_PATH_STYLE": "yes",
        "REPLICATION_BLOCKSTORE_S3_CREDENTIALS_ACCESS_KEY_ID": "minio",
        "REPLICATION_BLOCKSTORE_S3_CREDENTIALS_SECRET_ACCESS_KEY": "minio-secret",
        "REPLICATION_AUTH_ENCRYPT_SECRET_KEY": "k",
        "REPLICATION_LAKEFS_ACCESS_KEY_ID": "AKIA",
        "REPLICATION_LAKEFS_SECRET_ACCESS_KEY": "s",
        "REPLICATION_MIRRORS_DATABASE_SQLITE_PATH": str(tmp_path / "m.db"),
        "REPLICATION_OPTIONAL_EMPTY": "",  # empty values are ignored, even unknown names
        # Kubernetes service links for a Service named "replication" are not settings:
        "REPLICATION_SERVICE_HOST": "10.0.0.12",
        "REPLICATION_SERVICE_PORT": "8008",
        "REPLICATION_PORT": "tcp://10.0.0.12:8008",
        "REPLICATION_PORT_8008_TCP_ADDR": "10.0.0.12",
    }
    config = load_config(None, env=env)
    assert config.regional_endpoint == "http://127.0.0.1:8001"  # /api/v1 suffix dropped: base URL
    assert config.endpoint_for("east") == "http://127.0.0.1:8002"
    store = config.store_by_id("")
    assert store.s3.force_path_style is True
    assert store.s3.credentials.access_key_id == "minio"
    assert config.mirrors_database.sqlite.path == str(tmp_path / "m.db")


def test_replication_config_env_names_the_file(config_file: Path) -> None:
    config = load_config(None, env={"REPLICATION_CONFIG": str(config_file)})
    assert config.blockstore is not None and config.blockstore.local.path == "/srv/lakefs/block"


def test_unknown_env_var_is_an_error_with_suggestion(config_file: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config_file, env={"REPLICATION_COMMIT_SENSOR_PROCESS_BRANCH_DURATION": "2m"})
    assert info.value.path == "commit_sensor.process_branch_duration"
    assert "did you mean REPLICATION_COMMIT_SENSOR_PROCESS_BRANCHES_DURATION?" in str(info.value)


def test_env_key_for_unknown_map_entry_asks_for_json(config_file: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config_file, env={"REPLICATION_REGION_CREDENTIALS_MARS_1_ACCESS_KEY_ID": "x"})
    assert info.value.path == "region_credentials"
    assert "REPLICATION_REGION_CREDENTIALS to a JSON object" in str(info.value)


def test_bad_env_value_names_field_and_variable(config_file: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(config_file, env={"REPLICATION_VALIDATOR_RUN_INTERVAL": "often"})
    assert info.value.path == "validator.run_interval"
    assert "from environment variable REPLICATION_VALIDATOR_RUN_INTERVAL" in str(info.value)


def test_bad_env_json(config_file: Path) -> None:
    with pytest.raises(ConfigError, match="invalid JSON in REPLICATION_DST_ENDPOINTS") as info:
        load_config(config_file, env={"REPLICATION_DST_ENDPOINTS": '{"a": '})
    assert info.value.path == "dst_endpoints"
