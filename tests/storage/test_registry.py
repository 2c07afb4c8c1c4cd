"""StoreRegistry: building stores from settings and choosing the store that serves a URI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakefs_mirror_dagster.config import (
    LocalSettings,
    S3Credentials,
    S3Settings,
    Secret,
    StoreConfig,
)
from lakefs_mirror_dagster.storage import (
    LocalBlockstore,
    S3Blockstore,
    StorageConfigError,
    StoreRegistry,
    build_blockstore,
)

MiB = 1024 * 1024


def s3_settings(store_id: str, endpoint: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": store_id,
        "type": "s3",
        "description": "ignored by us",
        "s3": {
            "endpoint": endpoint,
            "force_path_style": True,
            "credentials": {"access_key_id": "AKIA", "secret_access_key": "top-secret-value"},
            **extra,
        },
    }


def test_builds_s3_store_from_lakefs_shaped_settings() -> None:
    store = build_blockstore(
        s3_settings("minio", "http://127.0.0.1:9000"), multipart_threshold=64 * MiB, multipart_chunk_size=8388608
    )
    assert isinstance(store, S3Blockstore)
    assert store.endpoint == "http://127.0.0.1:9000"
    assert store.region == "us-east-1"  # a custom endpoint still needs a signing region
    assert (store.multipart_threshold, store.multipart_chunk_size) == (64 * 1024**2, 8 * 1024**2)
    assert store.uses_static_credentials
    assert "top-secret-value" not in repr(store)
    config = store.client.meta.config
    assert getattr(config, "s3", None) == {"addressing_style": "path"}
    assert getattr(config, "retries", {}).get("mode") == "standard"


def test_builds_local_store_from_the_typed_config(tmp_path: Path) -> None:
    store = build_blockstore(StoreConfig(id="disk", type="local", local=LocalSettings(path=str(tmp_path))))
    assert isinstance(store, LocalBlockstore) and store.root == str(tmp_path)


@pytest.mark.parametrize("store_type", ["mem", "transient"])
def test_lakefs_test_stores_are_not_supported(store_type: str) -> None:
    with pytest.raises(NotImplementedError, match=f"type {store_type} is not supported yet"):
        build_blockstore({"id": "x", "type": store_type})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"id": "x"}, "type: required field is missing"),
        ({"id": "x", "type": "ftp"}, "type: unsupported value 'ftp'"),
        ({"id": "x", "type": "local", "local": {"path": " "}}, "local.path: must not be empty"),
        (
            {"id": "x", "type": "s3", "s3": {"credentials": {"access_key_id": "a"}}},
            "s3.credentials.secret_access_key: required when access_key_id is set",
        ),
        # sizes are the transfer section's, parsed by the config: a store has none of its own
        ({"id": "x", "type": "s3", "s3": {"multipart_chunk_size": "64MiB"}}, "s3.multipart_chunk_size: unknown key"),
    ],
)
def test_bad_settings_name_the_problem(settings: dict[str, Any], message: str) -> None:
    """Mappings are read by the config's own parser: the same checks and messages as a config file."""
    with pytest.raises(StorageConfigError, match=message) as bad:
        build_blockstore(settings)
    assert str(bad.value).startswith("store 'x': ")


def test_sizes_are_ints_the_config_parsed_never_text() -> None:
    """There is one size parser (the config's): text such as '64M', which it refuses as ambiguous and the
    registry's own parser used to read as 64,000,000, never reaches a store."""
    for bad in ("64M", "64MiB", 0, -1, True):
        with pytest.raises(StorageConfigError, match="multipart_chunk_size must be a positive number of bytes"):
            build_blockstore(s3_settings("x", "http://127.0.0.1:9000"), multipart_chunk_size=bad)  # type: ignore[arg-type]


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    settings = {"id": "a", "type": "local", "local": {"path": str(tmp_path)}}
    with pytest.raises(StorageConfigError, match="duplicate blockstore id 'a'"):
        StoreRegistry.from_settings([settings, settings])


def test_store_for_uri_by_id_scheme_bucket_and_root(tmp_path: Path) -> None:
    registry = StoreRegistry.from_settings(
        [
            s3_settings("prod", "http://127.0.0.1:9000", buckets=["prod-data"]),
            s3_settings("backup", "http://127.0.0.1:9001", buckets=["backup-data", "archive"]),
            {"id": "disk", "type": "local", "local": {"path": str(tmp_path / "a")}},
            {"id": "disk2", "type": "local", "local": {"path": str(tmp_path / "b")}},
        ]
    )
    assert registry.ids == ["prod", "backup", "disk", "disk2"]
    assert registry.store_for_uri("s3://prod-data/ns/x") is registry.get("prod")
    assert registry.store_for_uri("s3://archive/ns/x") is registry.get("backup")
    assert registry.store_for_uri("s3://anything/x", storage_id="prod") is registry.get("prod")
    assert registry.store_for_uri(f"local://{tmp_path}/b/repo/data/o") is registry.get("disk2")
    with pytest.raises(StorageConfigError, match="several blockstores could serve it"):
        registry.store_for_uri("s3://unknown-bucket/x")
    with pytest.raises(StorageConfigError, match="several blockstores"):
        registry.store_for_uri("local://repo/x")  # relative local URI, two local roots
    unknown = r"unknown blockstore id 'nope' \(configured: 'prod', 'backup'"
    with pytest.raises(StorageConfigError, match=unknown):
        registry.store_for_uri("s3://prod-data/x", storage_id="nope")
    with pytest.raises(StorageConfigError, match="does not serve local://"):
        registry.store_for_uri("local://repo/x", storage_id="prod")
    with pytest.raises(StorageConfigError, match="no blockstore configured for gs:// URIs"):
        registry.store_for_uri("gs://bucket/x")


def test_single_store_per_scheme_needs_no_hints(tmp_path: Path) -> None:
    registry = StoreRegistry.from_settings(
        [
            s3_settings("only-s3", "http://127.0.0.1:9000"),
            {"id": "disk", "type": "local", "local": {"path": str(tmp_path)}},
        ]
    )
    # lakeFS OSS reports storage_id "" for every repository: that means "no id"
    assert registry.store_for_uri("s3://any-bucket/ns", storage_id="") is registry.get("only-s3")
    assert registry.store_for_uri("local://repo/data/o") is registry.get("disk")
    with pytest.raises(StorageConfigError, match="no blockstore configured for https://"):
        registry.store_for_uri("https://account.blob.core.windows.net/c/x")


def test_settings_from_the_replication_config(tmp_path: Path) -> None:
    settings = StoreConfig(
        id="aws",
        type="s3",
        s3=S3Settings(
            endpoint="https://s3.example.com",
            region="eu-west-1",
            max_retries=2,
            credentials=S3Credentials(access_key_id="AKIA", secret_access_key=Secret("the-real-secret")),
        ),
    )
    registry = StoreRegistry.from_settings([settings], multipart_threshold=32 * MiB, multipart_chunk_size=None)
    store = registry.get("aws")
    assert isinstance(store, S3Blockstore)
    credentials = store.client._request_signer._credentials  # type: ignore[attr-defined]
    assert credentials.secret_key == "the-real-secret"  # what boto3 signs with: unwrapped, not redacted
    assert store.multipart_threshold == 32 * 1024**2  # transfer-level override wins
    assert store.region == "eu-west-1"
    assert getattr(store.client.meta.config, "s3", None) == {"addressing_style": "auto"}
    # lakeFS's max_retries counts retries; botocore's total attempts include the first request
    assert getattr(store.client.meta.config, "retries", {}).get("total_max_attempts") == 3


def test_local_allowed_external_prefixes(tmp_path: Path) -> None:
    imports = tmp_path / "imports"
    (imports / "dir").mkdir(parents=True)
    (imports / "dir" / "f").write_bytes(b"imported")
    store = build_blockstore(
        {
            "id": "disk",
            "type": "local",
            "local": {"path": str(tmp_path / "block"), "allowed_external_prefixes": [str(imports)]},
        }
    )
    assert isinstance(store, LocalBlockstore)
    assert store.read_bytes(f"local://{imports}/dir/f") == b"imported"
    assert store.canonical_uri(f"local://{imports}/dir/f") == f"local://{imports}/dir/f"
    assert [i.uri for i in store.list_prefix(f"local://{imports}/")] == [f"local://{imports}/dir/f"]
    with pytest.raises(ValueError, match=r"outside the store root .* and the allowed external prefixes"):
        store.read_bytes(f"local://{tmp_path}/elsewhere")


def test_sse_settings_are_validated() -> None:
    with pytest.raises(StorageConfigError, match=r"s3\.server_side_encryption: unsupported value 'rot13'"):
        build_blockstore({"id": "x", "type": "s3", "s3": {"endpoint": "http://h:1", "server_side_encryption": "rot13"}})
