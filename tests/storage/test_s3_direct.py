"""The obstore request path of S3Blockstore against a real MinIO: same objects, same keys and same errors as
boto3 would give, for the calls it takes over (GET, PUT, HEAD)."""

from __future__ import annotations

import gzip
import io
import os

import pytest

from lakefs_mirror_dagster.storage import ObjectNotFound, S3Blockstore, SizeMismatchError, StorageAccessError
from lakefs_mirror_dagster.storage.s3_client import uses_proxy

from .conftest import MiB, S3ServerLike, s3_store_for

KEYS = [
    "plain/key.bin",
    "with space/and+plus=equals&amp;.txt",
    "unicode/\u00e9t\u00e9-\u65e5\u672c.csv",
    "percent/100%25 done?.log",
    "tilde~/semi;colon,comma'quote\"(paren)",
]


def test_the_store_uses_the_direct_path(s3_store: S3Blockstore) -> None:
    assert s3_store._direct is not None


@pytest.mark.parametrize("key", KEYS)
def test_keys_round_trip_as_boto3_names_them(s3_store: S3Blockstore, bucket: str, key: str) -> None:
    uri = f"s3://{bucket}/{key}"
    written = s3_store.write_bytes(uri, b"payload of " + key.encode())
    listed = s3_store.client.list_objects_v2(Bucket=bucket)["Contents"]
    assert [o["Key"] for o in listed] == [key], "the direct PUT stored the object under another key"
    head = s3_store.client.head_object(Bucket=bucket, Key=key)
    assert s3_store.stat(uri) == written
    assert written.etag == head["ETag"].strip('"')
    assert s3_store.read_bytes(uri) == b"payload of " + key.encode()


def test_bytes_come_back_as_stored_even_with_a_content_encoding(s3_store: S3Blockstore, bucket: str) -> None:
    """An object uploaded with Content-Encoding: gzip is copied as its stored (compressed) bytes."""
    stored = gzip.compress(b"hello " * 1000)
    s3_store.client.put_object(Bucket=bucket, Key="zipped", Body=stored, ContentEncoding="gzip")
    assert s3_store.read_bytes(f"s3://{bucket}/zipped") == stored
    assert s3_store.stat(f"s3://{bucket}/zipped").size == len(stored)  # type: ignore[union-attr]


def test_an_abandoned_read_does_not_spoil_the_next_request(s3_store: S3Blockstore, bucket: str) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB
    s3_store.write_bytes(f"s3://{bucket}/big", big)
    s3_store.write_bytes(f"s3://{bucket}/small", b"small")
    for _ in range(3):  # more than once: the pool hands the same connection back
        with s3_store.open_read(f"s3://{bucket}/big") as stream:
            assert stream.read(10) == big[:10]
        assert s3_store.read_bytes(f"s3://{bucket}/small") == b"small"
        assert s3_store.stat(f"s3://{bucket}/small").size == 5  # type: ignore[union-attr]


def test_missing_objects_and_bad_credentials_fail_as_with_boto3(
    s3_server: S3ServerLike, s3_store: S3Blockstore, bucket: str
) -> None:
    assert s3_store.stat(f"s3://{bucket}/nothing") is None
    with pytest.raises(ObjectNotFound):
        s3_store.read_bytes(f"s3://{bucket}/nothing")
    wrong = s3_store_for(s3_server, secret_access_key="not-the-secret-" + "x" * 16)
    with pytest.raises(StorageAccessError) as raised:
        wrong.write_bytes(f"s3://{bucket}/denied", b"x")
    assert "not-the-secret" not in str(raised.value)
    assert s3_store.stat(f"s3://{bucket}/denied") is None


def test_requests_through_a_proxy_stay_on_boto3(monkeypatch: pytest.MonkeyPatch, s3_server: S3ServerLike) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "")
    assert uses_proxy("http://minio.example:9000")
    assert s3_store_for(s3_server)._direct is None
    monkeypatch.setenv("no_proxy", "minio.example")
    assert not uses_proxy("http://minio.example:9000")


def test_through_a_proxy_uploads_go_part_after_part_on_boto3(s3_server: S3ServerLike, bucket: str) -> None:
    """What a proxy in the environment leaves: boto3 alone, one part in memory at a time, same object."""
    store = s3_store_for(s3_server)
    store._direct = None  # as uses_proxy() decides at construction (test_requests_through_a_proxy_stay_on_boto3)
    assert store.write_buffer_size(12 * MiB) == 5 * MiB
    data = os.urandom(12 * MiB)
    uri = f"s3://{bucket}/via-boto3"
    stat = store.write_stream(uri, io.BytesIO(data), len(data))
    assert stat.size == len(data) and stat.etag is not None and stat.etag.endswith("-3")
    assert store.read_bytes(uri) == data
    with pytest.raises(SizeMismatchError):
        store.write_stream(f"s3://{bucket}/short", io.BytesIO(data[: 6 * MiB]), len(data))
    assert store.stat(f"s3://{bucket}/short") is None
    assert store.client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
