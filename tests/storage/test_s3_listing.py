"""S3Blockstore listing against a real MinIO: pages, obstore for plain directories and boto3 for the rest,
and ``start_after`` on both paths."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from lakefs_mirror_dagster.storage import BucketNotFound, S3Blockstore


def test_list_prefix_paginates_and_uses_string_prefix(s3_store: S3Blockstore, bucket: str) -> None:
    keys = [f"ns/data/{i:05d}" for i in range(1050)]  # more than one 1000-key page
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3_store.write_bytes(f"s3://{bucket}/{k}", k.encode()), keys))
    s3_store.write_bytes(f"s3://{bucket}/ns2/other", b"x")
    listed = list(s3_store.list_prefix(f"s3://{bucket}/ns/"))
    assert [i.uri for i in listed] == [f"s3://{bucket}/{k}" for k in keys]
    assert all(i.size == 13 for i in listed)
    assert {i.uri for i in s3_store.list_prefix(f"s3://{bucket}/ns")} >= {f"s3://{bucket}/ns2/other"}
    assert [i.uri for i in s3_store.list_prefix(f"s3://{bucket}/ns/data/0104")] == [
        f"s3://{bucket}/ns/data/{i:05d}" for i in range(1040, 1050)
    ]


def test_a_directory_is_listed_through_obstore_exactly_as_s3_lists_it(
    s3_store: S3Blockstore, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = sorted((f"ns/dir/{n}" for n in ("a", "b#c", "e%20f", "g h", "x{y}", "\u00fc", "sub/deep")), key=str.encode)
    for key in keys:
        s3_store.write_bytes(f"s3://{bucket}/{key}", key.encode())
    by_boto3 = list(s3_store.list_prefix(f"s3://{bucket}/ns/di"))  # not a directory: boto3 lists it
    assert [i.uri for i in by_boto3] == [f"s3://{bucket}/{k}" for k in keys]

    def no_boto3_listing(*args: object, **kwargs: object) -> None:
        raise AssertionError("a plain directory must be listed by obstore")

    monkeypatch.setattr(s3_store.client, "get_paginator", no_boto3_listing)
    assert list(s3_store.list_prefix(f"s3://{bucket}/ns/dir/")) == by_boto3
    # lakeFS's upload names (a comma, and ``_`` in the token), listed from just before one of them
    uploads = [f"ns/data/g_1,2/dc40ub1ksd,-3ttIsZ_{c}Xq" for c in "abc"]
    for key in uploads:
        s3_store.write_bytes(f"s3://{bucket}/{key}", b"x")
    after = f"s3://{bucket}/{uploads[1][:-1]}"
    listed = [i.uri for i in s3_store.list_prefix(f"s3://{bucket}/ns/data/g_1,2/", start_after=after)]
    assert listed == [f"s3://{bucket}/{k}" for k in uploads[1:]]
    with pytest.raises(BucketNotFound):
        list(s3_store.list_prefix("s3://no-such-bucket-here/ns/"))


def test_a_key_obstore_cannot_represent_is_listed_on_by_boto3(
    s3_store: S3Blockstore, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3 keys with empty path segments (``a//b``) make object_store's listing fail; MinIO refuses such keys,
    so obstore's refusal is simulated after its second key: boto3 goes on from there, nothing twice."""
    from lakefs_mirror_dagster.storage.s3_native import UnlistableKeyError

    keys = [f"ns/dir/{i:02d}" for i in range(5)]
    for key in keys:
        s3_store.write_bytes(f"s3://{bucket}/{key}", b"x")
    native = s3_store._direct
    assert native is not None
    real_list = native.list

    def refuses_after_two(bucket_name: str, prefix: str, *, after: str | None = None):  # type: ignore[no-untyped-def]
        for n, item in enumerate(real_list(bucket_name, prefix, after=after)):
            if n == 2:
                raise UnlistableKeyError("empty path segment")
            yield item

    monkeypatch.setattr(native, "list", refuses_after_two)
    assert [i.uri for i in s3_store.list_prefix(f"s3://{bucket}/ns/dir/")] == [f"s3://{bucket}/{k}" for k in keys]


@pytest.mark.parametrize("prefix", ["ns/data/", "ns/da"], ids=["obstore", "boto3"])
def test_a_listing_starts_after_a_given_uri(s3_store: S3Blockstore, bucket: str, prefix: str) -> None:
    """``start_after`` is S3's StartAfter on both listing paths: only keys sorting after it, across pages."""
    keys = [f"ns/data/{i:05d}" for i in range(1100)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3_store.write_bytes(f"s3://{bucket}/{k}", b"x"), keys))
    after = [i.uri for i in s3_store.list_prefix(f"s3://{bucket}/{prefix}", start_after=f"s3://{bucket}/ns/data/0004")]
    assert after == [f"s3://{bucket}/{k}" for k in keys[40:]]
    between = s3_store.list_prefix(f"s3://{bucket}/{prefix}", start_after=f"s3://{bucket}/ns/data/00049")
    assert next(between).uri == f"s3://{bucket}/ns/data/00050"
    assert list(s3_store.list_prefix(f"s3://{bucket}/{prefix}", start_after=f"s3://{bucket}z/a")) == []
    assert len(list(s3_store.list_prefix(f"s3://{bucket}/{prefix}", start_after=f"s3://{bucket}"))) == 1100
