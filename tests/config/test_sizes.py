"""One size parser: byte sizes are parsed once, by the config, and reach the blockstores as those same ints.

The registry used to re-parse sizes with a parser of its own that disagreed with the config's (``64M`` was
refused by the config and read as 64,000,000 by the registry); now a store only ever gets ``int``s.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest

import lakefs_mirror_dagster.storage as storage
from lakefs_mirror_dagster.config import (
    ConfigError,
    MirrorsDatabaseConfig,
    ReplicationConfig,
    SqliteSettings,
    load_config,
    parse_config,
)
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.region.service import store_spec
from lakefs_mirror_dagster.storage import S3Blockstore, StorageConfigError, StoreSpec, TransferPool, build_blockstore

MiB = 1024 * 1024


def config_with(**transfer: Any) -> ReplicationConfig:
    return parse_config(
        {
            "region": "us-east-1",
            "organization_id": "my-org",
            "regional_endpoint": "http://lakefs-east:8000",
            "blockstore": {
                "type": "s3",
                "s3": {
                    "endpoint": "http://127.0.0.1:9000",
                    "force_path_style": True,
                    "credentials": {"access_key_id": "AKIASTORE", "secret_access_key": "store-secret-value"},
                },
            },
            "auth": {"encrypt": {"secret_key": "auth-secret"}},
            "lakefs": {"access_key_id": "AKIAREPLICATOR", "secret_access_key": "replicator-secret"},
            "transfer": transfer,
        },
        env={},
    )


@pytest.mark.parametrize("spelling", ["64M", "64m", "64 M"])
def test_an_ambiguous_size_is_refused_naming_the_field(spelling: str) -> None:
    with pytest.raises(ConfigError) as bad:
        config_with(multipart_chunk_size=spelling)
    assert bad.value.path == "transfer.multipart_chunk_size"
    assert str(bad.value).startswith("transfer.multipart_chunk_size: invalid byte size")
    assert "ambiguous" in str(bad.value) and "MiB" in str(bad.value)


def test_an_ambiguous_size_from_the_environment_names_the_variable(tmp_path: Any) -> None:
    path = tmp_path / "replication.yaml"
    path.write_text(
        "region: us-east-1\norganization_id: o\nregional_endpoint: http://lakefs:8000\n"
        "blockstore: {type: local}\nauth: {encrypt: {secret_key: k}}\n"
        "lakefs: {access_key_id: a, secret_access_key: s}\n"
    )
    with pytest.raises(ConfigError) as bad:
        load_config(path, env={"REPLICATION_TRANSFER_MULTIPART_THRESHOLD": "64M"})
    assert bad.value.path == "transfer.multipart_threshold"
    assert "from environment variable REPLICATION_TRANSFER_MULTIPART_THRESHOLD" in str(bad.value)


def test_the_size_a_store_gets_is_the_size_the_config_parsed() -> None:
    config = config_with(multipart_chunk_size="64MiB", multipart_threshold="128MiB")
    assert (config.transfer.multipart_chunk_size, config.transfer.multipart_threshold) == (67108864, 128 * MiB)
    store = store_spec(config, config.store_by_id("")).build()  # what ReplicationService builds
    assert isinstance(store, S3Blockstore)
    assert store.multipart_chunk_size == 67108864
    assert store.multipart_threshold == 128 * MiB


def test_a_store_refuses_size_text_instead_of_parsing_it_again() -> None:
    config = config_with()
    assert not hasattr(storage, "parse_size")
    for text in ("64M", "64MiB"):
        with pytest.raises(StorageConfigError, match="multipart_chunk_size must be a positive number of bytes"):
            build_blockstore(config.store_by_id(""), multipart_chunk_size=text)  # type: ignore[arg-type]


def test_the_spec_spark_broadcasts_is_typed_picklable_and_keeps_secrets_wrapped() -> None:
    config = config_with(multipart_chunk_size="64MiB")
    spec = store_spec(config, config.store_by_id(""))
    assert isinstance(spec, StoreSpec) and spec.store == config.store_by_id("")
    assert "store-secret-value" not in repr(spec) and "store-secret-value" not in str(spec)
    clone = pickle.loads(pickle.dumps(spec))  # what a broadcast does
    assert clone == spec
    store = clone.build()  # inside the task: the secret is revealed only to the client
    assert isinstance(store, S3Blockstore) and store.multipart_chunk_size == 67108864
    credentials = store.client._request_signer._credentials  # type: ignore[attr-defined]
    assert credentials.secret_key == "store-secret-value"


def test_max_bytes_in_flight_reaches_the_engines_transfer_budget(tmp_path: Path) -> None:
    config = config_with(max_bytes_in_flight="64MiB")
    database = MirrorsDatabaseConfig(sqlite=SqliteSettings(path=str(tmp_path / "mirrors.db")))
    service = ReplicationService(dataclasses.replace(config, mirrors_database=database))
    try:
        settings = service.engine_settings()
    finally:
        service.close()
    assert settings.max_bytes_in_flight == 64 * MiB
    assert TransferPool(max_bytes_in_flight=settings.max_bytes_in_flight).budget.capacity == 64 * MiB
