"""Store types in the replication config: gs and azure stores parse, fail clearly, and build blockstores.

Offline: building a gs or azure blockstore makes no network call (the GCS client is created on first use,
the Azure client connects lazily), so these tests need no emulator.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from lakefs_mirror_dagster.config import AzureSettings, GSSettings, Secret, parse_config
from lakefs_mirror_dagster.storage import AzureBlockstore, GCSBlockstore, StorageConfigError, build_blockstore
from tests.config.config_data import error_of

AZURE_KEY = "c2VjcmV0LWFjY291bnQta2V5LWZvci10ZXN0cw=="  # base64, as Azure account keys are


def with_stores(*stores: dict[str, Any]) -> dict[str, Any]:
    return {
        "region": "us-east-1",
        "organization_id": "my-org",
        "regional_endpoint": "http://lakefs-east:8000",
        "auth": {"encrypt": {"secret_key": "auth-secret"}},
        "lakefs": {"access_key_id": "AKIAREPLICATOR", "secret_access_key": "replicator-secret"},
        "blockstores": {"stores": list(stores)},
    }


def gs_store(**gs: Any) -> dict[str, Any]:
    return {"id": "gcs", "type": "gs", "backward_compatible": True, "gs": gs}


def azure_store(**azure: Any) -> dict[str, Any]:
    return {"id": "blob", "type": "azure", "azure": azure}


def built(data: dict[str, Any], store_id: str) -> Any:
    """The blockstore the replication service would build for ``store_id`` (same conversion it uses)."""
    config = parse_config(data, env={})
    return build_blockstore(config.store_by_id(store_id), multipart_threshold=16 << 20, multipart_chunk_size=8 << 20)


def test_gs_store_with_emulator_endpoint_builds_an_anonymous_gcs_store() -> None:
    data = with_stores(gs_store(endpoint="http://127.0.0.1:4443/"))
    config = parse_config(data, env={})
    settings = config.store_by_id("gcs").settings
    assert isinstance(settings, GSSettings) and settings.endpoint == "http://127.0.0.1:4443"
    store = built(data, "gcs")
    assert isinstance(store, GCSBlockstore)
    assert store.endpoint == "http://127.0.0.1:4443" and "gs" in store.schemes


def test_gs_credentials_json_is_a_secret_and_is_checked_when_building() -> None:
    key = json.dumps({"type": "service_account", "private_key": "PRIVATE-KEY-MATERIAL"})
    data = with_stores(gs_store(credentials_json=key))
    config = parse_config(data, env={})
    settings = config.store_by_id("gcs").gs
    assert isinstance(settings.credentials_json, Secret) and settings.credentials_json.reveal() == key
    assert "PRIVATE-KEY-MATERIAL" not in repr(config) and "PRIVATE-KEY-MATERIAL" not in str(config.as_dict())
    # an incomplete service-account key is refused when the store is built, without quoting it
    with pytest.raises(StorageConfigError, match=r"store 'gcs'.*not a usable Google credential") as bad:
        built(data, "gcs")
    assert "PRIVATE-KEY-MATERIAL" not in str(bad.value)


def test_gs_refuses_two_credential_sources_and_bad_endpoints() -> None:
    both = error_of(with_stores(gs_store(credentials_file="/k.json", credentials_json="{}")))
    assert both.path == "blockstores.stores[0].gs.credentials_json"
    assert "give credentials_json or credentials_file, not both" in str(both)
    bad_url = error_of(with_stores(gs_store(endpoint="localhost:4443")))
    assert bad_url.path == "blockstores.stores[0].gs.endpoint" and "not an http:// or https:// URL" in str(bad_url)


def test_misspelt_gs_key_gets_a_suggestion() -> None:
    error = error_of(with_stores(gs_store(endpont="http://127.0.0.1:4443")))
    assert error.path == "blockstores.stores[0].gs.endpont" and "did you mean 'endpoint'?" in str(error)


def test_azure_store_builds_with_test_endpoint_and_try_timeout() -> None:
    data = with_stores(
        azure_store(
            storage_account="devstoreaccount1",
            storage_access_key=AZURE_KEY,
            test_endpoint_url="http://127.0.0.1:10000",
            try_timeout="90s",
        )
    )
    config = parse_config(data, env={})
    settings = config.store_by_id("blob").settings
    assert isinstance(settings, AzureSettings) and settings.try_timeout == timedelta(seconds=90)
    assert AZURE_KEY not in repr(config)
    store = built(data, "blob")
    assert isinstance(store, AzureBlockstore)
    assert store.account_url == "http://127.0.0.1:10000/devstoreaccount1"
    assert store.serves_uri("https://devstoreaccount1.blob.core.windows.net/container/ns/data/o")
    assert store.serves_uri("http://127.0.0.1:10000/devstoreaccount1/container/ns/data/o")
    assert not store.serves_uri("https://someoneelse.blob.core.windows.net/container/o")
    assert AZURE_KEY not in store.describe()
    # lakeFS's own form of test_endpoint_url is the account URL itself
    data["blockstores"]["stores"][0]["azure"]["test_endpoint_url"] = "http://127.0.0.1:10000/devstoreaccount1/"
    same = built(data, "blob")
    assert same.account_url == "http://127.0.0.1:10000/devstoreaccount1"
    assert same.serves_uri("http://127.0.0.1:10000/devstoreaccount1/container/ns/data/o")


def test_azure_sovereign_domain_changes_the_uris_served() -> None:
    data = with_stores(
        azure_store(storage_account="acct", storage_access_key=AZURE_KEY, domain="blob.core.chinacloudapi.cn")
    )
    store = built(data, "blob")
    assert store.serves_uri("https://acct.blob.core.chinacloudapi.cn/c/o")
    assert not store.serves_uri("https://acct.blob.core.windows.net/c/o")


@pytest.mark.parametrize(
    ("azure", "path", "problem"),
    [
        ({"storage_access_key": AZURE_KEY}, "azure.storage_account", "required when type is azure"),
        ({"storage_account": "acct"}, "azure.storage_access_key", "authenticates with the account key"),
        (
            {"storage_account": "acct", "storage_access_key": AZURE_KEY, "test_endpoint_url": "127.0.0.1:10000"},
            "azure.test_endpoint_url",
            "not an http:// or https:// URL",
        ),
        ({"storage_account": "acct", "storage_access_key": AZURE_KEY, "try_timeout": "0s"}, "azure.try_timeout", ""),
    ],
)
def test_azure_errors_name_the_field(azure: dict[str, str], path: str, problem: str) -> None:
    error = error_of(with_stores(azure_store(**azure)))
    assert error.path == f"blockstores.stores[0].{path}"
    assert problem in str(error)


def test_azure_key_can_come_from_the_environment_and_is_never_printed() -> None:
    data = with_stores(azure_store(storage_account="acct"))
    env = {"REPLICATION_BLOCKSTORES_STORES_0_AZURE_STORAGE_ACCESS_KEY": AZURE_KEY}
    config = parse_config(data, env=env)
    assert config.store_by_id("blob").azure.storage_access_key.reveal() == AZURE_KEY
    assert AZURE_KEY not in repr(config) and AZURE_KEY not in str(config.as_dict())
    error = error_of(data, env={})
    assert error.path == "blockstores.stores[0].azure.storage_access_key"


def test_invalid_account_name_fails_when_the_store_is_built() -> None:
    # lakeFS's reference example uses "analytics-account"; the config accepts it, Azure (and the store) do not
    data = with_stores(azure_store(storage_account="analytics-account", storage_access_key=AZURE_KEY))
    parse_config(data, env={})
    with pytest.raises(StorageConfigError, match=r"store 'blob'.*3 to 24 lowercase letters and digits"):
        built(data, "blob")


def test_misspelt_store_type_suggests_gs() -> None:
    error = error_of(with_stores({"id": "x", "type": "gcs"}))
    assert error.path == "blockstores.stores[0].type"
    assert "expected one of: s3, local, gs, azure" in str(error) and "did you mean 'gs'?" in str(error)
