"""The replication config: reference defaults, YAML + REPLICATION_ env, the errors users see, redaction."""

from __future__ import annotations

import dataclasses
import logging
import pickle
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
import yaml

import lakefs_mirror_dagster.config
from lakefs_mirror_dagster.config import (
    AuthApiConfig,
    AuthCacheConfig,
    CommitSensorConfig,
    ConfigError,
    HooksConfig,
    LakeFSFrontConfig,
    LoggingConfig,
    MirrorsManagerConfig,
    ReplicationConfig,
    S3Settings,
    Secret,
    SparkConfig,
    TransferConfig,
    ValidatorConfig,
    dump_example_config,
    format_duration,
    load_config,
    parse_byte_size,
    parse_config,
    parse_duration,
)

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
    path.write_text(textwrap.dedent(text))
    return path


def error_of(data: dict[str, Any], env: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(data, env=env)
    return info.value


def without(data: dict[str, Any], dotted: str) -> dict[str, Any]:
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]
    return data


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

    assert config.transfer.concurrency == 16
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
# The reference's own examples
# ---------------------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------------------
# Troubleshooting cases of the multi-storage reference
# ---------------------------------------------------------------------------------------------------------


def test_duplicate_store_ids_are_a_startup_error() -> None:
    data = multi(MULTI_STORE_ON_PREM)
    data["blockstores"]["stores"][1]["id"] = "minio-prod"
    err = error_of(data)
    assert err.path == "blockstores.stores[1].id"
    assert "duplicate store id 'minio-prod'" in str(err)
    assert "blockstores.stores[0]" in str(err)


def test_missing_backward_compatible_is_reported_when_a_repository_needs_it() -> None:
    config = parse_config(multi(MULTI_STORE_ON_PREM))
    assert config.default_store is None
    # Repositories created on open-source lakeFS or before the upgrade carry storage id "".
    with pytest.raises(ConfigError) as info:
        config.store_by_id("")
    assert info.value.path == "blockstores.stores"
    assert "backward_compatible: true" in str(info.value)

    data = multi(MULTI_STORE_ON_PREM)
    data["blockstores"]["stores"][0]["backward_compatible"] = True
    fixed = parse_config(data)
    assert fixed.store_by_id("").id == "minio-prod"
    assert fixed.store_by_id("minio-backup").id == "minio-backup"


def test_two_backward_compatible_stores_are_refused() -> None:
    data = multi(MULTI_STORE_ON_PREM)
    for store in data["blockstores"]["stores"]:
        store["backward_compatible"] = True
    err = error_of(data)
    assert err.path == "blockstores.stores[1].backward_compatible"
    assert "only one store" in str(err)


def test_blockstore_and_blockstores_together_are_refused() -> None:
    data = multi(MULTI_STORE_ON_PREM)
    data["blockstore"] = {"type": "local"}
    err = error_of(data)
    assert err.path == "blockstores"
    assert "mutually exclusive" in str(err)


def test_neither_blockstore_nor_blockstores() -> None:
    err = error_of(without(minimal(), "blockstore"))
    assert err.path == "blockstore"
    assert "blockstores" in err.problem


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"),
    [
        (
            lambda d: d["blockstores"]["stores"][0].update(type="minio"),
            "blockstores.stores[0].type",
            "use type s3",
        ),
        (
            lambda d: d["blockstores"]["stores"][1].update(type="ftp"),
            "blockstores.stores[1].type",
            "s3, local",
        ),
        (lambda d: d["blockstores"]["stores"][0].pop("id"), "blockstores.stores[0].id", "required"),
        (
            lambda d: d["blockstores"]["stores"][0].update(id="bad id"),
            "blockstores.stores[0].id",
            "invalid store id",
        ),
        (lambda d: d["blockstores"].update(stores=[]), "blockstores.stores", "at least one store"),
        (lambda d: d["blockstores"].pop("stores"), "blockstores.stores", "required field is missing"),
        (
            lambda d: d["blockstores"]["stores"][1]["azure"].pop("storage_account"),
            "blockstores.stores[1].azure.storage_account",
            "required when type is azure",
        ),
    ],
)
def test_bad_store_definitions(mutate: Any, path: str, fragment: str) -> None:
    data = multi(MULTI_STORE_MULTI_CLOUD)
    mutate(data)
    err = error_of(data)
    assert err.path == path
    assert fragment in str(err)


# ---------------------------------------------------------------------------------------------------------
# YAML file + REPLICATION_ environment
# ---------------------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------------------
# Errors: missing, unknown, bad values, bad files
# ---------------------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------------------
# Durations and sizes
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1m", timedelta(minutes=1)),
        ("20s", timedelta(seconds=20)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5h", timedelta(minutes=90)),
        ("2m3s4ms", timedelta(minutes=2, seconds=3, milliseconds=4)),
        ("300us", timedelta(microseconds=300)),
        ("1500ns", timedelta(microseconds=2)),  # rounded to timedelta's microsecond resolution
        ("0", timedelta(0)),
        (" 45s ", timedelta(seconds=45)),
        ("-1m", timedelta(minutes=-1)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "10", "1d", "m", "1x", "1m-", "1 m", "one minute", "1h 30m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_days_get_a_hint() -> None:
    with pytest.raises(ValueError, match="24h"):
        parse_duration("1d")


@pytest.mark.parametrize(
    "value", [timedelta(0), timedelta(minutes=90), timedelta(milliseconds=1500), timedelta(microseconds=7)]
)
def test_format_duration_round_trips(value: timedelta) -> None:
    assert parse_duration(format_duration(value)) == value


def test_format_duration_is_short() -> None:
    assert format_duration(timedelta(minutes=90)) == "1h30m"
    assert format_duration(timedelta(seconds=20)) == "20s"
    assert format_duration(timedelta(milliseconds=500)) == "500ms"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("64MiB", 64 * MiB), ("16 MiB", 16 * MiB), ("1GB", 10**9), ("1.5KiB", 1536), (1024, 1024), ("77", 77)],
)
def test_parse_byte_size(value: str | int, expected: int) -> None:
    assert parse_byte_size(value) == expected


@pytest.mark.parametrize("value", ["64M", "1.3B", "lots", "-1", "5 parsecs"])
def test_parse_byte_size_rejects(value: str) -> None:
    with pytest.raises(ValueError, match="invalid byte size"):
        parse_byte_size(value)


# ---------------------------------------------------------------------------------------------------------
# Secrets never printed
# ---------------------------------------------------------------------------------------------------------

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


def test_secrets_do_not_appear_in_repr_str_or_dict(caplog: pytest.LogCaptureFixture) -> None:
    config = config_full_of_secrets()
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("config: %s / %r", config, config)
    shown = [repr(config), str(config), f"{config}", str(config.as_dict()), caplog.text]
    shown += [repr(s) for s in config.stores] + [str(config.mirrors_database.sqlalchemy_url)]
    for text in shown:
        for secret in SECRETS:
            assert secret not in text
    assert "**********" in repr(config)


def test_secrets_are_available_to_code_that_needs_them() -> None:
    config = config_full_of_secrets()
    assert config.auth.encrypt.secret_key.reveal() == SECRETS[0]
    assert config.credentials_for("us-east-1") == ("AKIA", SECRETS[1])
    assert config.credentials_for("us-west-2") == ("AKIAW", SECRETS[7])
    assert config.store_by_id("main").s3.credentials.session_token.reveal() == SECRETS[3]
    url = config.mirrors_database.sqlalchemy_url
    assert url.password == SECRETS[4]
    revealed = str(config.as_dict(reveal_secrets=True))
    assert all(secret in revealed for secret in SECRETS)


def test_secret_type_behaviour() -> None:
    secret = Secret("x-Sekr1t")
    assert secret == Secret("x-Sekr1t") and secret != Secret("other")
    assert pickle.loads(pickle.dumps(secret)).reveal() == "x-Sekr1t"
    assert "x-Sekr1t" not in repr(secret) + str(secret) + f"{secret!s}{secret!r}"
    assert not Secret("") and repr(Secret("")) == "Secret('')"


def test_errors_about_secret_values_do_not_echo_them() -> None:
    err = error_of(
        minimal(mirrors_database={"type": "postgres", "postgres": {"connection_string": "mysql://u:Sekr1t@h/db"}})
    )
    assert err.path == "mirrors_database.postgres.connection_string"
    assert "Sekr1t" not in str(err)


# ---------------------------------------------------------------------------------------------------------
# Helpers the engine uses
# ---------------------------------------------------------------------------------------------------------


def test_endpoint_for() -> None:
    config = parse_config(minimal())
    assert config.endpoint_for("us-east-1") == "http://lakefs-east:8000"
    assert config.endpoint_for("us-west-2") == "https://lakefs-west.example.com"
    with pytest.raises(ConfigError) as info:
        config.endpoint_for("us-west-3")
    assert info.value.path == "dst_endpoints"
    assert "known regions: us-east-1, us-west-2" in str(info.value)
    assert "did you mean 'us-west-2'?" in str(info.value)


def test_credentials_for_unknown_region() -> None:
    with pytest.raises(ConfigError, match="unknown region 'mars'"):
        parse_config(minimal()).credentials_for("mars")


def test_source_store_for() -> None:
    config = parse_config(minimal(source_stores={"us-west-2": {"type": "s3", "s3": {"region": "us-west-2"}}}))
    store = config.source_store_for("us-west-2")
    assert store is not None and store.s3.region == "us-west-2" and store.backward_compatible
    assert config.source_store_for("us-east-1") is None  # read through the lakeFS API
    with pytest.raises(ConfigError, match="unknown region"):
        config.source_store_for("mars")


def test_sqlite_url_is_usable(tmp_path: Path) -> None:
    config = parse_config(minimal(mirrors_database={"sqlite": {"path": str(tmp_path / "sub" / "m.db")}}))
    url = config.mirrors_database.sqlalchemy_url
    assert url.drivername.startswith("sqlite")
    assert url.database == str(tmp_path / "sub" / "m.db")
    (tmp_path / "sub").mkdir()
    engine = sqlalchemy.create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("select 41 + 1")).scalar() == 42
    engine.dispose()
    assert (tmp_path / "sub" / "m.db").exists()


@pytest.mark.parametrize(
    ("connection_string", "host", "port", "database", "query"),
    [
        (
            "postgres://u:p@db.example.com:5433/mirrors?sslmode=disable",
            "db.example.com",
            5433,
            "mirrors",
            {"sslmode": "disable"},
        ),
        ("postgresql://u:p@localhost/mirrors", "localhost", None, "mirrors", {}),
        (
            "host=127.0.0.1 port=5432 dbname=mirrors user=u password=p sslmode=disable",
            "127.0.0.1",
            5432,
            "mirrors",
            {"sslmode": "disable"},
        ),
    ],
)
def test_postgres_url_forms(
    connection_string: str, host: str, port: int | None, database: str, query: dict[str, str]
) -> None:
    config = parse_config(
        minimal(mirrors_database={"type": "POSTGRES", "postgres": {"connection_string": connection_string}})
    )
    url = config.mirrors_database.sqlalchemy_url
    assert url.drivername == "postgresql+psycopg"  # psycopg 3 is the installed driver
    assert (url.host, url.port, url.database, dict(url.query)) == (host, port, database, query)
    assert (url.username, url.password) == ("u", "p")


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


# ---------------------------------------------------------------------------------------------------------
# spark: object transfer on Spark
# ---------------------------------------------------------------------------------------------------------


def test_spark_transfer_is_off_by_default_with_a_threshold() -> None:
    spark = parse_config(minimal()).spark
    assert spark.transfer_enabled is False
    assert spark.transfer_threshold_objects > 0 and spark.transfer_max_partitions >= 1


def test_spark_transfer_fields_from_yaml_and_env() -> None:
    data = minimal(spark={"transfer_enabled": True, "transfer_threshold_objects": 20000})
    config = parse_config(data, env={"REPLICATION_SPARK_TRANSFER_MAX_PARTITIONS": "32"})
    assert (config.spark.transfer_enabled, config.spark.transfer_threshold_objects) == (True, 20000)
    assert config.spark.transfer_max_partitions == 32
    assert parse_config(minimal(spark={"transfer_threshold_objects": 0})).spark.transfer_threshold_objects == 0


@pytest.mark.parametrize(
    ("spark", "path", "fragment"),
    [
        ({"transfer_threshold_objects": -1}, "spark.transfer_threshold_objects", "at least 0"),
        ({"transfer_max_partitions": 0}, "spark.transfer_max_partitions", "at least 1"),
        ({"transfer_enabled": "maybe"}, "spark.transfer_enabled", "true or"),
        ({"transfer_treshold_objects": 5}, "spark.transfer_treshold_objects", "transfer_threshold_objects"),
    ],
)
def test_bad_spark_transfer_values_name_the_field(spark: dict[str, Any], path: str, fragment: str) -> None:
    err = error_of(minimal(spark=spark))
    assert err.path.startswith(path), str(err)
    assert fragment in str(err)


# ---------------------------------------------------------------------------------------------------------
# No value accepted, then refused at build time or ignored (issue 31)
# ---------------------------------------------------------------------------------------------------------


def test_dual_layer_kms_is_refused_at_load_naming_the_key_and_what_to_use() -> None:
    err = error_of(minimal(blockstore={"type": "s3", "s3": {"server_side_encryption": "aws:kms:dsse"}}))
    assert err.path == "blockstore.s3.server_side_encryption"
    assert "'aws:kms:dsse' (dual-layer SSE-KMS) is not supported" in str(err) and "use 'aws:kms'" in str(err)
    for sse in ("", "AES256", "aws:kms"):  # what the store builds
        config = parse_config(minimal(blockstore={"type": "s3", "s3": {"server_side_encryption": sse}}))
        assert config.blockstore is not None and config.blockstore.s3.server_side_encryption == sse


def test_a_kms_key_without_aws_kms_is_refused_at_load() -> None:
    s3 = {"server_side_encryption": "AES256", "server_side_encryption_kms_key_id": "arn:aws:kms:key/1"}
    err = error_of(minimal(blockstore={"type": "s3", "s3": s3}))
    assert err.path == "blockstore.s3.server_side_encryption_kms_key_id" and "aws:kms" in str(err)
    config = parse_config(minimal(blockstore={"type": "s3", "s3": {**s3, "server_side_encryption": "aws:kms"}}))
    assert config.blockstore is not None and config.blockstore.s3.server_side_encryption_kms_key_id


def test_the_example_config_offers_only_values_that_load() -> None:
    text = (Path(lakefs_mirror_dagster.config.__file__).parent / "example.yaml").read_text()
    assert "dsse" not in text and "discover_bucket_region" not in text and "signing:" not in text


@pytest.mark.parametrize(
    ("blockstore", "path", "why"),
    [
        ({"type": "s3", "s3": {"discover_bucket_region": True}}, "blockstore.s3.discover_bucket_region", "s3.region"),
        ({"type": "s3", "s3": {"discover_bucket_region": False}}, "blockstore.s3.discover_bucket_region", "region"),
        ({"type": "local", "local": {"import_enabled": True}}, "blockstore.local.import_enabled", "importing"),
        ({"type": "local", "local": {"import_hidden": False}}, "blockstore.local.import_hidden", "importing"),
        ({"type": "gs", "gs": {"s3_endpoint": "https://storage.googleapis.com"}}, "blockstore.gs.s3_endpoint", "API"),
    ],
)
def test_lakefs_store_keys_that_would_do_nothing_are_refused_at_load(
    blockstore: dict[str, Any], path: str, why: str
) -> None:
    err = error_of(minimal(blockstore=blockstore))
    assert err.path == path and why in str(err) and "remove" in str(err)


def test_blockstores_signing_is_refused_at_load() -> None:
    data = multi(MULTI_STORE_MULTI_CLOUD)
    data["blockstores"]["signing"] = {"secret_key": "a-signing-secret"}
    err = error_of(data)
    assert err.path == "blockstores.signing" and "would do nothing" in str(err)
    assert "a-signing-secret" not in str(err)


def test_without_a_backward_compatible_store_a_mirror_must_name_its_store() -> None:
    """The reference: with no store marked, lakeFS refuses repositories without a storage id; its own multi-store
    examples mark none. So the config loads, and what needs the store is refused, naming the key."""
    config = parse_config(multi(MULTI_STORE_MULTI_CLOUD))
    assert config.default_store is None
    with pytest.raises(ConfigError, match="backward_compatible: true"):
        config.store_by_id("")
    assert config.store_by_id("s3-prod").type == "s3"
