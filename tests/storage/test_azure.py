"""AzureBlockstore against a real Azurite (object bytes through obstore, listings through the SDK): URI forms,
blocks, atomicity, copies."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.emulators import AzuriteServer, start_lakefs_on_azurite
from lakefs_mirror_devenv.processes import stop_pid

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.storage import (
    AzureBlockstore,
    BucketNotFound,
    CopyTask,
    InvalidStorageURI,
    LocalBlockstore,
    ObjectNotFound,
    SizeMismatchError,
    StorageAccessError,
    StorageConfigError,
    StoreRegistry,
    TransferPool,
    TransientStorageError,
    build_blockstore,
)

from .conftest import FailingStream, MiB, S3ServerLike, s3_store_for, sha
from .conftest_emulators import SMALL_CHUNK, SMALL_THRESHOLD, azure_store, azurite, make_container

__all__ = ["azure_store", "azurite", "make_container"]  # fixtures used by this module


def blob_name(store: AzureBlockstore, uri: str) -> tuple[str, str]:
    container, _, name = uri[len(store.public_base) + 1 :].partition("/")
    return container, name


def test_round_trip_stat_and_delete(azure_store: AzureBlockstore, make_container: Callable[[], str]) -> None:
    uri = f"{make_container()}/ns/data/o"
    assert azure_store.stat(uri) is None
    written = azure_store.write_bytes(uri, b"hello world")
    stat = azure_store.stat(uri)
    assert stat is not None and stat.size == 11 and stat.etag == written.etag
    assert azure_store.read_bytes(uri) == b"hello world"
    with azure_store.open_read(uri) as stream:
        assert stream.read(5) == b"hello"
        assert stream.read() == b" world"
    azure_store.write_bytes(uri, b"second version")
    assert azure_store.read_bytes(uri) == b"second version"
    azure_store.delete(uri)
    assert azure_store.stat(uri) is None
    azure_store.delete(uri)  # deleting an absent object is not an error


def test_both_uri_forms_name_the_same_object(
    azurite: AzuriteServer, azure_store: AzureBlockstore, make_container: Callable[[], str]
) -> None:
    canonical = f"{make_container()}/o"
    assert canonical.startswith(f"https://{azurite.account}.blob.core.windows.net/")
    emulator_form = canonical.replace(azure_store.public_base, f"{azurite.endpoint}/{azurite.account}")
    azure_store.write_bytes(emulator_form, b"same object")
    assert azure_store.read_bytes(canonical) == b"same object"
    container = canonical.rsplit("/", 1)[0]
    emulator_container = emulator_form.rsplit("/", 1)[0]
    assert [i.uri for i in azure_store.list_prefix(f"{container}/")] == [canonical]
    assert [i.uri for i in azure_store.list_prefix(f"{emulator_container}/")] == [emulator_form]
    with pytest.raises(InvalidStorageURI, match="not in Azure storage account devstoreaccount1"):
        azure_store.stat("https://otheraccount.blob.core.windows.net/c/o")
    with pytest.raises(InvalidStorageURI, match="names no object"):
        azure_store.stat(f"{container}/")


def test_missing_object_and_container_are_told_apart(
    azure_store: AzureBlockstore, make_container: Callable[[], str]
) -> None:
    container = make_container()
    with pytest.raises(ObjectNotFound, match="no such object") as missing:
        azure_store.open_read(f"{container}/nope")
    assert not isinstance(missing.value, BucketNotFound)
    absent = f"{azure_store.public_base}/absent-container"
    with pytest.raises(BucketNotFound, match="container does not exist"):
        azure_store.stat(f"{absent}/x")
    with pytest.raises(BucketNotFound):
        list(azure_store.list_prefix(f"{absent}/"))


@pytest.mark.parametrize("announce_size", [True, False])
def test_large_object_is_committed_as_several_blocks(
    azure_store: AzureBlockstore, make_container: Callable[[], str], announce_size: bool
) -> None:
    data = os.urandom(3 * MiB + 12345)
    uri = f"{make_container()}/big"
    stat = azure_store.write_stream(uri, io.BytesIO(data), len(data) if announce_size else None)
    assert stat.size == len(data)
    container, name = blob_name(azure_store, uri)
    committed, _ = azure_store.client.get_blob_client(container, name).get_block_list("all")
    assert len(committed) == -(-len(data) // SMALL_CHUNK)  # one block per 256 KiB chunk
    out = bytearray()
    with azure_store.open_read(uri) as stream:
        for _ in range(10_000):
            piece = stream.read(100_000)
            if not piece:
                break
            out += piece
    assert sha(bytes(out)) == sha(data)
    assert sha(azure_store.read_bytes(uri)) == sha(data)


def test_the_byte_budget_reserves_every_block_an_upload_holds(azure_store: AzureBlockstore) -> None:
    """obstore sends two blocks at once while it fills the third: a large object reserves three blocks."""
    assert azure_store.write_buffer_size(SMALL_THRESHOLD - 1) == SMALL_THRESHOLD
    assert azure_store.write_buffer_size(64 * MiB) == 3 * SMALL_CHUNK


def test_failed_source_commits_nothing_and_keeps_previous(
    azure_store: AzureBlockstore, make_container: Callable[[], str]
) -> None:
    container = make_container()
    fresh, existing = f"{container}/broken", f"{container}/obj"
    with pytest.raises(TransientStorageError, match="source connection dropped"):
        azure_store.write_stream(fresh, FailingStream(os.urandom(2 * MiB)), 3 * MiB)
    assert azure_store.stat(fresh) is None
    azure_store.write_bytes(existing, b"previous")
    with pytest.raises(TransientStorageError):
        azure_store.write_stream(existing, FailingStream(os.urandom(2 * MiB)), None)
    assert azure_store.read_bytes(existing) == b"previous"


@pytest.mark.parametrize(
    ("delivered", "declared", "match"), [(10, 100, "expected 100 bytes"), (10, 2 * MiB, "2097152")]
)
def test_short_source_is_size_mismatch(
    azure_store: AzureBlockstore, make_container: Callable[[], str], delivered: int, declared: int, match: str
) -> None:
    uri = f"{make_container()}/short"
    with pytest.raises(SizeMismatchError, match=match):
        azure_store.write_stream(uri, io.BytesIO(os.urandom(delivered)), declared)
    assert azure_store.stat(uri) is None


def test_long_source_is_size_mismatch(azure_store: AzureBlockstore, make_container: Callable[[], str]) -> None:
    uri = f"{make_container()}/long"
    with pytest.raises(SizeMismatchError, match="more than"):
        azure_store.write_stream(uri, io.BytesIO(os.urandom(2 * MiB + 1)), 2 * MiB)
    assert azure_store.stat(uri) is None


def test_list_prefix_is_a_string_prefix(azure_store: AzureBlockstore, make_container: Callable[[], str]) -> None:
    container = make_container()
    keys = [f"ns/data/{i:03d}" for i in range(25)]
    for key in keys:
        azure_store.write_bytes(f"{container}/{key}", key.encode())
    azure_store.write_bytes(f"{container}/ns2/other", b"x")
    listed = list(azure_store.list_prefix(f"{container}/ns/"))
    assert [i.uri for i in listed] == [f"{container}/{k}" for k in keys]
    assert all(i.size == 11 for i in listed)
    assert len(list(azure_store.list_prefix(f"{container}/ns"))) == 26
    assert [i.uri for i in azure_store.list_prefix(f"{container}/ns/data/02")] == [
        f"{container}/ns/data/{i:03d}" for i in range(20, 25)
    ]


def test_wrong_key_is_access_denied(azurite: AzuriteServer, make_container: Callable[[], str]) -> None:
    uri = f"{make_container()}/o"
    wrong = AzureBlockstore(
        storage_account=azurite.account, storage_access_key="d3Jvbmcga2V5", endpoint=azurite.endpoint
    )
    with pytest.raises(StorageAccessError, match="access denied") as denied:
        wrong.write_bytes(uri, b"x")
    assert "d3Jvbmcga2V5" not in str(denied.value)


def test_transfer_pool_minio_to_azure_to_local(
    s3_server: S3ServerLike,
    make_bucket: Callable[[str], str],
    azure_store: AzureBlockstore,
    make_container: Callable[[], str],
    tmp_path: Path,
) -> None:
    minio = s3_store_for(s3_server)
    local = LocalBlockstore(root=tmp_path / "block")
    s3_bucket, container = make_bucket("src"), make_container()
    objects = {f"ns/data/{i}": os.urandom(1000 * i) for i in range(1, 9)}
    objects["ns/data/large"] = os.urandom(3 * MiB + 7)  # several Azure blocks
    for key, data in objects.items():
        minio.write_bytes(f"s3://{s3_bucket}/{key}", data)
    pool = TransferPool(concurrency=4)

    to_azure = [CopyTask(minio, f"s3://{s3_bucket}/{k}", azure_store, f"{container}/{k}") for k in objects]
    first = pool.run(to_azure)
    assert (first.copied, first.skipped, first.failed) == (len(objects), 0, [])
    assert first.bytes_copied == sum(len(d) for d in objects.values())
    again = pool.run(to_azure)
    assert (again.copied, again.skipped) == (0, len(objects))

    to_local = [
        CopyTask(azure_store, f"{container}/{k}", local, f"local://mirror/{k}", len(d)) for k, d in objects.items()
    ]
    back = pool.run(to_local)
    assert back.ok and back.copied == len(objects)
    for key, data in objects.items():
        assert sha(local.read_bytes(f"local://mirror/{key}")) == sha(data)


def test_build_blockstore_and_route_by_account(azurite: AzuriteServer, make_container: Callable[[], str]) -> None:
    settings = {
        "id": "blob",
        "type": "azure",
        "azure": {
            "storage_account": azurite.account,
            "storage_access_key": azurite.key,
            "test_endpoint_url": azurite.endpoint,
            "try_timeout": "2m",
        },
    }
    other = {
        "id": "other",
        "type": "azure",
        "azure": {"storage_account": "otheraccount", "storage_access_key": azurite.key},
    }
    registry = StoreRegistry.from_settings([other, settings])
    uri = f"{make_container()}/built"
    store = registry.store_for_uri(uri)
    assert store is registry.get("blob")
    store.write_bytes(uri, b"from settings")
    assert store.read_bytes(uri) == b"from settings"
    assert registry.store_for_uri("https://otheraccount.blob.core.windows.net/c/o") is registry.get("other")
    with pytest.raises(StorageConfigError, match="none of the https:// blockstores serves it"):
        registry.store_for_uri("https://third.blob.core.windows.net/c/o")
    with pytest.raises(StorageConfigError, match="does not serve it"):
        registry.store_for_uri(uri, storage_id="other")


@pytest.mark.parametrize(
    ("azure", "message"),
    [
        ({}, "azure.storage_account: required when type is azure"),
        ({"storage_account": "acct"}, "azure.storage_access_key: required when type is azure"),
        ({"storage_account": "Bad_Name", "storage_access_key": "a2V5"}, "lowercase letters and digits"),
        ({"storage_account": "acct", "storage_access_key": "not base64!"}, "not a base64 account key"),
        ({"storage_account": "acct", "storage_access_key": "a2V5", "test_endpoint_url": "ftp://x"}, "http"),
        (
            {"storage_account": "acct", "storage_access_key": "a2V5", "try_timeout": "soon"},
            "azure.try_timeout: invalid duration",
        ),
    ],
)
def test_bad_azure_settings_name_the_problem(azure: dict[str, str], message: str) -> None:
    with pytest.raises(StorageConfigError, match=message) as bad:
        build_blockstore({"id": "x", "type": "azure", "azure": azure})
    assert "store 'x'" in str(bad.value)
    assert "not base64!" not in str(bad.value)


def test_mirror_from_minio_region_into_a_lakefs_region_on_azurite(
    azurite: AzuriteServer,
    azure_store: AzureBlockstore,
    make_container: Callable[[], str],
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    """End to end: lakeFS itself stores on Azurite; the engine writes there through AzureBlockstore."""
    container = make_container().rsplit("/", 1)[1]
    region = start_lakefs_on_azurite("region-az", tmp_path / "lakefs-az", azurite, container)
    try:
        source = lakefs_env.region("region-a")
        config = {
            "region": "region-az",
            "organization_id": "devenv",
            "regional_endpoint": region.endpoint,
            "dst_endpoints": {"region-a": source.endpoint},
            "mirrors_database": {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}},
            "blockstore": region.blockstore,
            "auth": {"encrypt": {"secret_key": region.auth_secret_key}},
            "lakefs": {"access_key_id": region.access_key_id, "secret_access_key": region.secret_access_key},
            "region_credentials": {
                "region-a": {"access_key_id": source.access_key_id, "secret_access_key": source.secret_access_key}
            },
        }
        path = tmp_path / "replication-region-az.yaml"
        path.write_text(yaml.safe_dump(config))
        service = ReplicationService(load_config(path, env={}))
        try:
            src = client_for("region-a")
            repo, mirror_name = unique_name("repo"), unique_name("mirror")
            src.create_repository(repo, source.namespace_for(repo))
            expected = {f"data/part-{i}.bin": os.urandom(1000 + i) for i in range(5)}
            expected["data/large.bin"] = os.urandom(3 * MiB + 1)
            for key, data in expected.items():
                src.upload_object(repo, "main", key, data)
            src.commit(repo, "main", "first")
            src.create_tag(repo, "v1", "main")

            service.create_mirror(
                source_repository=repo,
                name=mirror_name,
                region="region-az",
                storage_namespace=region.namespace_for(mirror_name),
                source_region="region-a",
            )
            [result] = service.sync(name=mirror_name)
            assert result.ok, result.to_json()
            dst = service.client("region-az")
            assert dst.get_branch_head(mirror_name, "main") == src.get_branch_head(repo, "main")
            for key, data in expected.items():
                assert dst.get_object(mirror_name, "v1", key) == data  # read back by lakeFS from Azurite
            # the bytes really are in the emulator, under the mirror's namespace, in lakeFS's Azure URI form
            stored = list(azure_store.list_prefix(region.namespace_for(mirror_name) + "/"))
            assert sum(1 for o in stored if "/_lakefs/" not in o.uri) >= len(expected)
            assert all(o.uri.startswith("https://devstoreaccount1.blob.core.windows.net/") for o in stored)
        finally:
            service.close()
    finally:
        stop_pid(region.pid)
