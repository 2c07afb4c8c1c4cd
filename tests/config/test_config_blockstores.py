"""``blockstore`` / ``blockstores``: the multi-storage reference's troubleshooting cases, and lakeFS store keys
that would do nothing here refused at load (issue 31)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lakefs_mirror_dagster.config
from lakefs_mirror_dagster.config import ConfigError, parse_config
from tests.config.config_data import MULTI_STORE_MULTI_CLOUD, MULTI_STORE_ON_PREM, error_of, minimal, multi, without

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
