"""Storage URI parsing and namespace joining, as lakeFS resolves relative addresses."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.storage import (
    InvalidStorageURI,
    StorageURI,
    join_namespace,
    parse_uri,
    relative_to_namespace,
)


def test_parse_s3_uri_splits_bucket_and_key() -> None:
    parsed = parse_uri("s3://bucket/prefix/data/x?y#z")
    assert parsed == StorageURI("s3", "bucket", "prefix/data/x?y#z")  # ? and # are legal key characters
    assert str(parsed) == "s3://bucket/prefix/data/x?y#z"


def test_parse_local_relative_and_absolute_forms() -> None:
    relative = parse_uri("local://repo1/data/p/o")
    assert (relative.bucket, relative.key, relative.is_local_absolute) == ("repo1", "data/p/o", False)
    absolute = parse_uri("local:///var/tmp/block/repo1/data/p/o")
    assert absolute.is_local_absolute
    assert str(absolute) == "local:///var/tmp/block/repo1/data/p/o"


@pytest.mark.parametrize("bad", ["", "bucket/key", "s3:/bucket/key", "://x", "s3:///key", "s3://b/\x00"])
def test_parse_rejects_non_uris(bad: str) -> None:
    with pytest.raises(InvalidStorageURI):
        parse_uri(bad)


def test_join_namespace_s3_and_local() -> None:
    assert join_namespace("s3://b/prefix", "data/x/y") == "s3://b/prefix/data/x/y"
    assert join_namespace("s3://b/prefix/", "data/x/y") == "s3://b/prefix/data/x/y"
    assert join_namespace("s3://b", "_lakefs/abc") == "s3://b/_lakefs/abc"
    assert join_namespace("local://repo1", "data/x/y") == "local://repo1/data/x/y"
    assert join_namespace("local:///var/block/repo1", "data/x") == "local:///var/block/repo1/data/x"


@pytest.mark.parametrize("rel", ["", "/data/x", "s3://other/key", "data/../../x"])
def test_join_namespace_rejects_non_relative_addresses(rel: str) -> None:
    with pytest.raises(InvalidStorageURI):
        join_namespace("s3://b/prefix", rel)


def test_join_namespace_rejects_empty_local_namespace() -> None:
    with pytest.raises(InvalidStorageURI, match="names no location"):
        join_namespace("local://", "data/x")


def test_relative_to_namespace_is_inverse_of_join() -> None:
    ns = "s3://b/prefix"
    assert relative_to_namespace(ns, join_namespace(ns, "data/p/o")) == "data/p/o"
    assert relative_to_namespace(ns, "s3://b/prefix2/data/p/o") is None  # a sibling prefix is outside
    assert relative_to_namespace(ns, "s3://other/prefix/data") is None
