"""GCSBlockstore against a real fake-gcs-server through the official SDK: objects, streaming, atomicity, copies."""

from __future__ import annotations

import io
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from lakefs_mirror_devenv.emulators import FakeGCSServer

from lakefs_mirror_dagster.storage import (
    BucketNotFound,
    CopyTask,
    GCSBlockstore,
    InvalidStorageURI,
    LocalBlockstore,
    ObjectNotFound,
    S3Blockstore,
    SizeMismatchError,
    StorageConfigError,
    StoreRegistry,
    TransferPool,
    TransientStorageError,
    build_blockstore,
    copy_object,
)

from .conftest import FailingStream, MiB, S3ServerLike, s3_store_for, sha
from .conftest_emulators import SMALL_CHUNK, SMALL_THRESHOLD, fake_gcs, gcs_store, gcs_store_for, make_gcs_bucket

__all__ = ["fake_gcs", "gcs_store", "make_gcs_bucket"]  # fixtures used by this module


class RecordingStream:
    """A source that remembers how much each read asked for (memory per transfer is bounded by that)."""

    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)
        self.requests: list[int] = []

    def read(self, size: int = -1, /) -> bytes:
        self.requests.append(size)
        return self._inner.read(size)


def test_round_trip_stat_and_delete(gcs_store: GCSBlockstore, make_gcs_bucket: Callable[[], str]) -> None:
    uri = f"gs://{make_gcs_bucket()}/ns/data/o"
    assert gcs_store.stat(uri) is None
    written = gcs_store.write_bytes(uri, b"hello world")
    stat = gcs_store.stat(uri)
    assert stat is not None and stat.size == 11 and stat.etag == written.etag
    assert gcs_store.read_bytes(uri) == b"hello world"
    with gcs_store.open_read(uri) as stream:
        assert stream.read(5) == b"hello"
        assert stream.read() == b" world"
    gcs_store.write_bytes(uri, b"")  # empty objects are objects too
    empty = gcs_store.stat(uri)
    assert empty is not None and empty.size == 0
    assert gcs_store.read_bytes(uri) == b""
    gcs_store.delete(uri)
    assert gcs_store.stat(uri) is None
    gcs_store.delete(uri)  # deleting an absent object is not an error


def test_missing_object_and_bucket_are_told_apart(gcs_store: GCSBlockstore, make_gcs_bucket: Callable[[], str]) -> None:
    bucket = make_gcs_bucket()
    with pytest.raises(ObjectNotFound, match="no such object") as missing:
        gcs_store.open_read(f"gs://{bucket}/nope")
    assert not isinstance(missing.value, BucketNotFound)
    with pytest.raises(ObjectNotFound):
        gcs_store.read_bytes(f"gs://{bucket}/nope")
    absent = f"absent-{uuid.uuid4().hex[:8]}"
    with pytest.raises(BucketNotFound, match=f"bucket '{absent}' does not exist"):
        gcs_store.stat(f"gs://{absent}/x")
    with pytest.raises(BucketNotFound):
        list(gcs_store.list_prefix(f"gs://{absent}/"))
    with pytest.raises(InvalidStorageURI, match="only serves gs://"):
        gcs_store.stat(f"s3://{bucket}/x")


@pytest.mark.parametrize("announce_size", [True, False])
def test_large_object_streams_in_bounded_chunks(
    gcs_store: GCSBlockstore, make_gcs_bucket: Callable[[], str], announce_size: bool
) -> None:
    data = os.urandom(3 * MiB + 12345)  # 13 chunks of 256 KiB, the last one partial
    uri = f"gs://{make_gcs_bucket()}/big"
    source = RecordingStream(data)
    stat = gcs_store.write_stream(uri, source, len(data) if announce_size else None)
    assert stat.size == len(data)
    # the source was read piecewise: never more than one chunk (or, unannounced, the threshold probe) at once
    limit = SMALL_CHUNK if announce_size else SMALL_THRESHOLD
    assert max(source.requests) <= limit and len(source.requests) >= len(data) // SMALL_THRESHOLD
    head = gcs_store.stat(uri)
    assert head is not None and head.size == len(data)
    out = bytearray()
    with gcs_store.open_read(uri) as stream:
        for _ in range(10_000):
            piece = stream.read(100_000)
            if not piece:
                break
            out += piece
    assert sha(bytes(out)) == sha(data)
    assert sha(gcs_store.read_bytes(uri)) == sha(data)


def test_failed_source_leaves_nothing_and_keeps_previous(
    gcs_store: GCSBlockstore, make_gcs_bucket: Callable[[], str]
) -> None:
    bucket = make_gcs_bucket()
    fresh, existing = f"gs://{bucket}/broken", f"gs://{bucket}/obj"
    with pytest.raises(TransientStorageError, match="source connection dropped"):
        gcs_store.write_stream(fresh, FailingStream(os.urandom(2 * MiB)), 3 * MiB)
    assert gcs_store.stat(fresh) is None
    gcs_store.write_bytes(existing, b"previous")
    with pytest.raises(TransientStorageError):
        gcs_store.write_stream(existing, FailingStream(os.urandom(2 * MiB)), None)
    assert gcs_store.read_bytes(existing) == b"previous"


@pytest.mark.parametrize(
    ("delivered", "declared", "message"), [(10, 100, "expected 100 bytes"), (10, 2 * MiB, "2097152")]
)
def test_short_source_is_size_mismatch(
    gcs_store: GCSBlockstore, make_gcs_bucket: Callable[[], str], delivered: int, declared: int, message: str
) -> None:
    uri = f"gs://{make_gcs_bucket()}/short"
    with pytest.raises(SizeMismatchError, match=message):
        gcs_store.write_stream(uri, io.BytesIO(os.urandom(delivered)), declared)
    assert gcs_store.stat(uri) is None


def test_long_source_is_size_mismatch(gcs_store: GCSBlockstore, make_gcs_bucket: Callable[[], str]) -> None:
    uri = f"gs://{make_gcs_bucket()}/long"
    with pytest.raises(SizeMismatchError, match="more than"):
        gcs_store.write_stream(uri, io.BytesIO(os.urandom(2 * MiB + 1)), 2 * MiB)
    assert gcs_store.stat(uri) is None


def test_list_prefix_is_a_string_prefix(gcs_store: GCSBlockstore, make_gcs_bucket: Callable[[], str]) -> None:
    bucket = make_gcs_bucket()
    keys = [f"ns/data/{i:03d}" for i in range(25)]
    for key in keys:
        gcs_store.write_bytes(f"gs://{bucket}/{key}", key.encode())
    gcs_store.write_bytes(f"gs://{bucket}/ns2/other", b"x")
    listed = list(gcs_store.list_prefix(f"gs://{bucket}/ns/"))
    assert [i.uri for i in listed] == [f"gs://{bucket}/{k}" for k in keys]
    assert all(i.size == 11 for i in listed)
    assert {i.uri for i in gcs_store.list_prefix(f"gs://{bucket}/ns")} == {
        *(f"gs://{bucket}/{k}" for k in keys),
        f"gs://{bucket}/ns2/other",
    }
    assert [i.uri for i in gcs_store.list_prefix(f"gs://{bucket}/ns/data/02")] == [
        f"gs://{bucket}/ns/data/{i:03d}" for i in range(20, 25)
    ]
    assert len(list(gcs_store.list_prefix(f"gs://{bucket}"))) == 26


def test_server_side_copy_inside_gcs(fake_gcs: FakeGCSServer, make_gcs_bucket: Callable[[], str]) -> None:
    src_store, dst_store = gcs_store_for(fake_gcs), gcs_store_for(fake_gcs)
    assert dst_store.same_endpoint_as(src_store)
    src, dst = f"gs://{make_gcs_bucket()}/o", f"gs://{make_gcs_bucket()}/copied/o"
    data = os.urandom(MiB + 1)
    src_store.write_bytes(src, data)
    result = copy_object(src_store, src, dst_store, dst)
    assert (result.method, result.size) == ("server_side", len(data))
    assert dst_store.read_bytes(dst) == data


def test_transfer_pool_minio_to_gcs_to_local(
    s3_server: S3ServerLike,
    make_bucket: Callable[[str], str],
    gcs_store: GCSBlockstore,
    make_gcs_bucket: Callable[[], str],
    tmp_path: Path,
) -> None:
    minio: S3Blockstore = s3_store_for(s3_server)
    local = LocalBlockstore(root=tmp_path / "block")
    s3_bucket, gs_bucket = make_bucket("src"), make_gcs_bucket()
    objects = {f"ns/data/{i}": os.urandom(1000 * i) for i in range(1, 9)}
    objects["ns/data/large"] = os.urandom(3 * MiB + 7)  # several GCS chunks
    for key, data in objects.items():
        minio.write_bytes(f"s3://{s3_bucket}/{key}", data)
    pool = TransferPool(concurrency=4)

    to_gcs = [CopyTask(minio, f"s3://{s3_bucket}/{k}", gcs_store, f"gs://{gs_bucket}/{k}") for k in objects]
    first = pool.run(to_gcs)
    assert (first.copied, first.skipped, first.failed) == (len(objects), 0, [])
    assert first.bytes_copied == sum(len(d) for d in objects.values())
    again = pool.run(to_gcs)
    assert (again.copied, again.skipped) == (0, len(objects))  # present with the right size: skipped

    to_local = [
        CopyTask(gcs_store, f"gs://{gs_bucket}/{k}", local, f"local://mirror/{k}", len(d)) for k, d in objects.items()
    ]
    back = pool.run(to_local)
    assert back.ok and back.copied == len(objects)
    for key, data in objects.items():
        assert sha(local.read_bytes(f"local://mirror/{key}")) == sha(data)


def test_build_blockstore_from_settings(fake_gcs: FakeGCSServer, make_gcs_bucket: Callable[[], str]) -> None:
    store = build_blockstore({"id": "emu", "type": "gs", "gs": {"endpoint": fake_gcs.endpoint}})
    assert isinstance(store, GCSBlockstore) and fake_gcs.endpoint in store.describe()
    uri = f"gs://{make_gcs_bucket()}/built"
    store.write_bytes(uri, b"from settings")
    registry = StoreRegistry.from_settings([{"id": "emu", "type": "gs", "gs": {"endpoint": fake_gcs.endpoint}}])
    assert registry.store_for_uri(uri).read_bytes(uri) == b"from settings"


def test_bad_gcs_settings_name_the_problem_without_the_secret() -> None:
    secret = '{"type": "service_account", "private_key": "SEKRIT-KEY-MATERIAL"'  # truncated JSON
    with pytest.raises(StorageConfigError, match="credentials_json is not valid JSON") as bad_json:
        build_blockstore({"id": "g", "type": "gs", "gs": {"credentials_json": secret}})
    assert "SEKRIT" not in str(bad_json.value)
    with pytest.raises(StorageConfigError, match="not a usable Google credential") as bad_key:
        build_blockstore({"id": "g", "type": "gs", "gs": {"credentials_json": secret + "}"}})
    assert "SEKRIT" not in str(bad_key.value)
    with pytest.raises(StorageConfigError, match="has type 'external_account'; expected 'service_account'"):
        build_blockstore({"id": "g", "type": "gs", "gs": {"credentials_json": '{"type": "external_account"}'}})
    with pytest.raises(StorageConfigError, match=r"cannot read credentials_file /nonexistent/key\.json: No such file"):
        build_blockstore({"id": "g", "type": "gs", "gs": {"credentials_file": "/nonexistent/key.json"}})
    with pytest.raises(StorageConfigError, match="multiple of 262144"):
        build_blockstore({"id": "g", "type": "gs", "gs": {"endpoint": "http://127.0.0.1:1"}}, multipart_chunk_size=1000)
    with pytest.raises(StorageConfigError, match=r"gs.endpoint: 'ftp://x' is not an http:// or https:// URL"):
        build_blockstore({"id": "g", "type": "gs", "gs": {"endpoint": "ftp://x"}})
