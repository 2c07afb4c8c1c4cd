"""S3Blockstore against a real MinIO: object operations, multipart, server-side copy, error mapping."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lakefs_mirror_dagster.storage import (
    BucketNotFound,
    ChecksumMismatchError,
    InvalidStorageURI,
    LocalBlockstore,
    ObjectNotFound,
    S3Blockstore,
    SizeMismatchError,
    StorageAccessError,
    TransientStorageError,
    copy_object,
)
from lakefs_mirror_dagster.storage.checksums import ExpectedContent, VerifyingReader, multipart_etag
from lakefs_mirror_dagster.storage.s3_native import STREAMED_MIN_BYTES
from lakefs_mirror_dagster.storage.streams import READ_PIECE

from .conftest import FailingStream, MiB, S3ServerLike, s3_store_for


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def pending_uploads(store: S3Blockstore, bucket: str) -> list[str]:
    response = store.client.list_multipart_uploads(Bucket=bucket)
    return [u["Key"] for u in response.get("Uploads", [])]


def test_write_stat_read_delete(s3_store: S3Blockstore, bucket: str) -> None:
    uri = f"s3://{bucket}/ns/data/p/o"
    assert s3_store.stat(uri) is None
    written = s3_store.write_bytes(uri, b"hello world")
    stat = s3_store.stat(uri)
    assert stat is not None and stat.size == 11
    # a single-part S3 ETag is the MD5 of the content
    assert stat.etag == written.etag == md5(b"hello world")
    assert s3_store.read_bytes(uri) == b"hello world"
    with s3_store.open_read(uri) as stream:
        assert stream.read(5) == b"hello"
        assert stream.read() == b" world"
    s3_store.delete(uri)
    assert s3_store.stat(uri) is None
    s3_store.delete(uri)  # idempotent


def test_bytes_stored_unlike_the_md5_the_caller_gave_are_deleted_and_refused(
    s3_store: S3Blockstore, bucket: str
) -> None:
    """A range file's MD5 comes from the bytes that hashed to its ID; whatever reached the store instead (damaged
    between the two) is not left under that name."""
    uri = f"s3://{bucket}/ns/_lakefs/range"
    good = s3_store.write_bytes(uri, b"verified bytes", md5=md5(b"verified bytes"))
    assert good.etag == md5(b"verified bytes")
    with pytest.raises(ChecksumMismatchError, match="the bytes given have MD5"):
        s3_store.write_bytes(uri, b"damaged bytes!", md5=md5(b"verified bytes"))
    assert s3_store.stat(uri) is None


@pytest.mark.parametrize("announce_size", [True, False])
def test_multipart_above_threshold(s3_store: S3Blockstore, bucket: str, announce_size: bool) -> None:
    data = os.urandom(12 * MiB)
    uri = f"s3://{bucket}/big"
    stat = s3_store.write_stream(uri, io.BytesIO(data), len(data) if announce_size else None)
    assert stat.size == len(data)
    head = s3_store.stat(uri)
    assert head is not None and head.size == len(data)
    # S3 multipart ETags end in "-<number of parts>": 5 MiB + 5 MiB + 2 MiB, this store's part size
    assert (
        head.etag
        == multipart_etag(hashlib.md5(data[i : i + 5 * MiB]).digest() for i in range(0, len(data), 5 * MiB)) + "-3"
    )
    assert hashlib.sha256(s3_store.read_bytes(uri)).digest() == hashlib.sha256(data).digest()


def test_the_byte_budget_reserves_every_part_an_upload_holds(s3_server: S3ServerLike) -> None:
    """obstore sends two parts at once while it fills the third: a large object reserves three parts."""
    store = s3_store_for(s3_server, multipart_threshold=16 * MiB, multipart_chunk_size=8 * MiB)
    assert store.write_buffer_size(8 * MiB - 1) == 8 * MiB  # one PUT of a buffer
    assert store.write_buffer_size(16 * MiB - 1) == READ_PIECE  # one streamed PUT: a piece at a time
    assert store.write_buffer_size(2 * 1024 * MiB) == 3 * 8 * MiB
    assert store.write_buffer_size(200 * 1024 * MiB) == 3 * 21 * MiB  # 10,000 parts at most: 21 MiB parts


def test_a_checksum_refused_at_the_last_read_stores_nothing(s3_store: S3Blockstore, bucket: str) -> None:
    """The copy's checksum check refuses the bytes on the read that completes them: the upload is aborted."""
    data = os.urandom(12 * MiB)
    uri = f"s3://{bucket}/refused"
    expected = ExpectedContent(md5(b"other bytes"), len(data))
    with pytest.raises(ChecksumMismatchError, match="nothing was stored"):
        s3_store.write_stream(uri, VerifyingReader(io.BytesIO(data), expected, uri=uri), len(data))
    assert s3_store.stat(uri) is None
    assert pending_uploads(s3_store, bucket) == []


def test_small_unannounced_stream_is_a_single_put(s3_store: S3Blockstore, bucket: str) -> None:
    data = os.urandom(4 * MiB)
    stat = s3_store.write_stream(f"s3://{bucket}/small", io.BytesIO(data), None)
    assert stat.etag == md5(data)


def test_failed_multipart_upload_leaves_nothing(s3_store: S3Blockstore, bucket: str) -> None:
    uri = f"s3://{bucket}/broken"
    with pytest.raises(TransientStorageError, match="source connection dropped"):
        s3_store.write_stream(uri, FailingStream(os.urandom(7 * MiB)), 12 * MiB)
    assert s3_store.stat(uri) is None
    assert pending_uploads(s3_store, bucket) == []  # the multipart upload was aborted


def test_failed_overwrite_keeps_previous_object(s3_store: S3Blockstore, bucket: str) -> None:
    uri = f"s3://{bucket}/obj"
    s3_store.write_bytes(uri, b"previous")
    with pytest.raises(TransientStorageError):
        s3_store.write_stream(uri, FailingStream(os.urandom(6 * MiB)), None)
    assert s3_store.read_bytes(uri) == b"previous"


@pytest.mark.parametrize("declared", [100, 8 * MiB])
def test_short_source_is_size_mismatch(s3_store: S3Blockstore, bucket: str, declared: int) -> None:
    uri = f"s3://{bucket}/short"
    with pytest.raises(SizeMismatchError, match=f"expected {declared} bytes"):
        s3_store.write_stream(uri, io.BytesIO(b"0123456789"), declared)
    assert s3_store.stat(uri) is None
    assert pending_uploads(s3_store, bucket) == []


def test_long_source_is_size_mismatch(s3_store: S3Blockstore, bucket: str) -> None:
    uri = f"s3://{bucket}/long"
    with pytest.raises(SizeMismatchError, match="more than"):
        s3_store.write_stream(uri, io.BytesIO(os.urandom(11 * MiB)), 10 * MiB)
    assert s3_store.stat(uri) is None
    assert pending_uploads(s3_store, bucket) == []


def test_server_side_copy_between_buckets(s3_server: S3ServerLike, make_bucket: Callable[[str], str]) -> None:
    src_bucket, dst_bucket = make_bucket("src"), make_bucket("dst")
    src_store, dst_store = s3_store_for(s3_server), s3_store_for(s3_server)
    assert dst_store.same_endpoint_as(src_store)
    data = os.urandom(3 * MiB)
    src_store.write_bytes(f"s3://{src_bucket}/ns/data/o", data)
    result = copy_object(src_store, f"s3://{src_bucket}/ns/data/o", dst_store, f"s3://{dst_bucket}/ns2/data/o")
    assert result.method == "server_side" and result.size == len(data)
    assert dst_store.read_bytes(f"s3://{dst_bucket}/ns2/data/o") == data


def test_server_side_multipart_copy(s3_store: S3Blockstore, make_bucket: Callable[[str], str]) -> None:
    src_bucket, dst_bucket = make_bucket("src"), make_bucket("dst")
    data = os.urandom(12 * MiB)
    s3_store.write_bytes(f"s3://{src_bucket}/o", data)
    s3_store.max_single_copy_size = 6 * MiB  # stand-in for S3's 5 GiB CopyObject limit
    s3_store.copy_part_size = 5 * MiB
    stat = s3_store.server_side_copy(f"s3://{src_bucket}/o", f"s3://{dst_bucket}/o")
    head = s3_store.stat(f"s3://{dst_bucket}/o")
    assert stat.size == len(data) and head is not None and head.etag is not None and head.etag.endswith("-3")
    assert s3_store.read_bytes(f"s3://{dst_bucket}/o") == data


def test_streamed_copy_local_to_s3_and_back(
    s3_store: S3Blockstore, local_store: LocalBlockstore, bucket: str, tmp_path: Path
) -> None:
    data = os.urandom(12 * MiB)
    local_store.write_bytes("local://repo/data/o", data)
    assert not s3_store.same_endpoint_as(local_store)
    up = copy_object(local_store, "local://repo/data/o", s3_store, f"s3://{bucket}/ns/data/o")
    assert up.method == "stream" and up.size == len(data)
    down = copy_object(s3_store, f"s3://{bucket}/ns/data/o", local_store, "local://copy/data/o")
    assert down.method == "stream"
    assert (Path(local_store.root) / "copy/data/o").read_bytes() == data


def test_copy_of_missing_source_is_object_not_found(
    s3_store: S3Blockstore, local_store: LocalBlockstore, bucket: str
) -> None:
    with pytest.raises(ObjectNotFound, match="no such object"):
        copy_object(s3_store, f"s3://{bucket}/missing", local_store, "local://x/y")
    with pytest.raises(ObjectNotFound):
        copy_object(s3_store, f"s3://{bucket}/missing", s3_store, f"s3://{bucket}/y")


def test_missing_bucket_is_bucket_not_found_with_clear_message(s3_store: S3Blockstore) -> None:
    uri = "s3://no-such-bucket-4711/key"
    for operation in (
        lambda: s3_store.stat(uri),
        lambda: s3_store.read_bytes(uri),
        lambda: s3_store.open_read(uri),
        lambda: s3_store.write_bytes(uri, b"x"),
        lambda: list(s3_store.list_prefix("s3://no-such-bucket-4711/")),
    ):
        with pytest.raises(BucketNotFound, match="bucket 'no-such-bucket-4711' does not exist"):
            operation()
    assert issubclass(BucketNotFound, ObjectNotFound)


def test_missing_object_is_object_not_found(s3_store: S3Blockstore, bucket: str) -> None:
    with pytest.raises(ObjectNotFound, match=rf"read s3://{bucket}/nope: no such object"):
        s3_store.read_bytes(f"s3://{bucket}/nope")
    with pytest.raises(ObjectNotFound):
        s3_store.open_read(f"s3://{bucket}/nope")


def test_wrong_credentials_are_access_errors_without_secrets(s3_server: S3ServerLike, bucket: str) -> None:
    secret = "wrong-secret-Xy7Qz0123456789"
    store = s3_store_for(s3_server, secret_access_key=secret, max_attempts=1)
    with pytest.raises(StorageAccessError) as info:
        store.write_bytes(f"s3://{bucket}/x", b"x")
    assert "SignatureDoesNotMatch" in str(info.value)
    assert secret not in str(info.value) and secret not in repr(store)


def test_unreachable_endpoint_is_transient(tmp_path: Path) -> None:
    from .conftest import _free_port

    store = S3Blockstore(
        endpoint=f"http://127.0.0.1:{_free_port()}",
        region=None,
        access_key_id="a",
        secret_access_key="b",
        max_attempts=1,
        connect_timeout=1,
        read_timeout=1,
    )
    with pytest.raises(TransientStorageError, match="connection problem"):
        store.stat("s3://bucket/key")


def test_uri_validation(s3_store: S3Blockstore) -> None:
    with pytest.raises(InvalidStorageURI, match="only serves s3://"):
        s3_store.stat("local://x/y")
    with pytest.raises(InvalidStorageURI, match="names no object key"):
        s3_store.write_bytes("s3://bucket", b"x")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"endpoint": "127.0.0.1:9000"}, "must be an http"),
        ({"secret_access_key": None}, "give both access_key_id and secret_access_key"),
        ({"multipart_chunk_size": MiB}, "below S3's minimum part size"),
    ],
)
def test_bad_settings_fail_clearly(kwargs: dict[str, object], message: str) -> None:
    settings: dict[str, object] = {
        "endpoint": "http://127.0.0.1:9000",
        "region": None,
        "access_key_id": "a",
        "secret_access_key": "b",
    }
    settings.update(kwargs)
    with pytest.raises(ValueError, match=message):
        S3Blockstore(**settings)  # type: ignore[arg-type]


def test_single_puts_go_unsigned_and_multipart_parts_signed(s3_server: S3ServerLike, bucket: str) -> None:
    """A single PUT carries UNSIGNED-PAYLOAD (the store's MD5 ETag checks it, so nobody hashes SHA-256 of the
    body); MinIO accepts that over plain HTTP. Multipart parts, whose ETags this package never sees, stay signed,
    and so does every body when server-side encryption may make the ETag something else than an MD5."""
    store = s3_store_for(s3_server)
    small, large = os.urandom(MiB), os.urandom(12 * MiB)
    assert store.write_bytes(f"s3://{bucket}/one-put", small).etag == md5(small)
    assert store.write_stream(f"s3://{bucket}/in-parts", io.BytesIO(large), len(large)).etag.endswith("-3")  # type: ignore[union-attr]
    assert store.read_bytes(f"s3://{bucket}/one-put") == small
    assert hashlib.sha256(store.read_bytes(f"s3://{bucket}/in-parts")).digest() == hashlib.sha256(large).digest()
    direct = store._direct
    assert direct is not None
    assert direct._store(bucket).config["unsigned_payload"] == "true"
    assert direct._store(bucket, for_parts=True).config["unsigned_payload"] == "false"
    encrypted = s3_store_for(s3_server, server_side_encryption="AES256")._direct
    assert encrypted is not None and not encrypted.unsigned_puts
    assert encrypted._store(bucket).config["unsigned_payload"] == "false"


def test_objects_below_the_default_threshold_copy_in_one_put_checked_by_md5(
    s3_server: S3ServerLike, bucket: str
) -> None:
    """With the default ``transfer`` sizes a 64 MiB object is one (streamed) PUT: its ETag at the mirror is its MD5,
    which validation compares in full (a multipart ETag validates by size only)."""
    from lakefs_mirror_dagster.config.sections import TransferConfig

    sizes = TransferConfig()
    store = s3_store_for(
        s3_server, multipart_threshold=sizes.multipart_threshold, multipart_chunk_size=sizes.multipart_chunk_size
    )
    data = os.urandom(64 * MiB)
    store.write_bytes(f"s3://{bucket}/src", data)
    result = copy_object(
        store,
        f"s3://{bucket}/src",
        store,
        f"s3://{bucket}/dst",
        size=len(data),
        etag=md5(data),
        allow_server_side=False,
    )
    assert (result.method, str(result.check)) == ("stream", "md5")
    assert store.stat(f"s3://{bucket}/dst") == store.stat(f"s3://{bucket}/src")
    assert store.write_buffer_size(len(data)) == READ_PIECE  # streamed: one piece, from the byte budget


class _CountsReads(io.RawIOBase):
    """A source that records the largest read asked of it."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.largest = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        self.largest = max(self.largest, len(buffer))
        return self._data.readinto(buffer)


def test_a_large_single_put_is_streamed_a_piece_at_a_time(s3_server: S3ServerLike, bucket: str) -> None:
    """Between STREAMED_MIN_BYTES and the multipart threshold, one PUT is sent as the source delivers it."""
    store = s3_store_for(s3_server, multipart_threshold=64 * MiB)
    data = os.urandom(STREAMED_MIN_BYTES + 12345)
    source = _CountsReads(data)
    stat = store.write_stream(f"s3://{bucket}/streamed", source, len(data))
    assert source.largest <= READ_PIECE
    assert stat.size == len(data) and stat.etag == md5(data)  # one PUT: its ETag is the MD5
    assert store.read_bytes(f"s3://{bucket}/streamed") == data


@pytest.mark.parametrize("delivered", ["fewer", "more", "broken", "refused"])
def test_a_streamed_put_whose_source_misbehaves_stores_nothing(
    s3_server: S3ServerLike, bucket: str, delivered: str
) -> None:
    store = s3_store_for(s3_server, multipart_threshold=64 * MiB)
    size = STREAMED_MIN_BYTES + 3 * MiB
    data = os.urandom(size)
    uri = f"s3://{bucket}/misbehaves-{delivered}"
    stream: object
    if delivered == "fewer":
        stream, error = io.BytesIO(data[:-1]), SizeMismatchError
    elif delivered == "more":
        stream, error = io.BytesIO(data + b"x"), SizeMismatchError
    elif delivered == "broken":
        stream, error = FailingStream(data[: size // 2]), TransientStorageError
    else:  # the copy's checksum check refuses the bytes on the read that completes them
        stream = VerifyingReader(io.BytesIO(data), ExpectedContent(md5(b"other bytes"), size), uri=uri)
        error = ChecksumMismatchError
    with pytest.raises(error):
        store.write_stream(uri, stream, size)  # type: ignore[arg-type]
    assert store.stat(uri) is None
    assert pending_uploads(store, bucket) == []


def test_a_large_object_of_known_size_is_read_from_the_socket(s3_server: S3ServerLike, bucket: str) -> None:
    """With its size known, a large object's GET goes through a presigned URL, read straight into the caller's
    buffer (the copy of such an object: ``test_objects_below_the_default_threshold_copy_in_one_put...``)."""
    store = s3_store_for(s3_server, multipart_threshold=64 * MiB)
    data = os.urandom(STREAMED_MIN_BYTES + 777)
    store.write_bytes(f"s3://{bucket}/big-src", data)
    with store.open_read(f"s3://{bucket}/big-src", size=len(data)) as stream:
        assert not isinstance(stream, io.BufferedReader)  # read from the socket, not through obstore's chunks
        assert stream.read() == data
    with pytest.raises(ObjectNotFound):
        store.open_read(f"s3://{bucket}/no-such-key", size=len(data))
    with pytest.raises(BucketNotFound):
        store.open_read("s3://no-such-bucket-here/x", size=len(data))


def test_a_streamed_put_to_a_missing_bucket_says_so(s3_server: S3ServerLike) -> None:
    store = s3_store_for(s3_server, multipart_threshold=64 * MiB)
    with pytest.raises(BucketNotFound):
        store.write_stream("s3://no-such-bucket-here/x", io.BytesIO(bytes(STREAMED_MIN_BYTES)), STREAMED_MIN_BYTES)
