"""LocalBlockstore: semantics of the blockstore interface on a directory, atomic writes, no escapes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from lakefs_mirror_dagster.storage import (
    InvalidStorageURI,
    LocalBlockstore,
    ObjectNotFound,
    PathEscapeError,
    SizeMismatchError,
    StorageError,
)
from lakefs_mirror_dagster.storage.local import TEMP_PREFIX

from .conftest import FailingStream


def all_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_write_read_stat_delete_roundtrip(local_store: LocalBlockstore) -> None:
    uri = "local://repo1/data/part/object"
    assert local_store.stat(uri) is None
    written = local_store.write_bytes(uri, b"hello world")
    assert (written.size, written.etag) == (11, None)
    assert local_store.stat(uri) == written
    assert local_store.read_bytes(uri) == b"hello world"
    with local_store.open_read(uri) as stream:
        assert stream.read(5) == b"hello"
        assert stream.read() == b" world"
    # the file lives where lakeFS's local adapter would put it
    assert (Path(local_store.root) / "repo1/data/part/object").read_bytes() == b"hello world"
    rewritten = local_store.write_bytes(uri, b"HELLO WORLD")  # same size, other bytes: another fingerprint
    assert rewritten.fingerprint != written.fingerprint and local_store.stat(uri) == rewritten
    local_store.delete(uri)
    assert local_store.stat(uri) is None
    local_store.delete(uri)  # deleting again is not an error, as in S3


def test_write_stream_in_chunks_larger_than_chunk_size(tmp_path: Path) -> None:
    store = LocalBlockstore(root=tmp_path, chunk_size=1000)
    data = os.urandom(10_500)
    stat = store.write_stream("local://ns/obj", io.BytesIO(data), len(data))
    assert stat.size == len(data)
    assert store.read_bytes("local://ns/obj") == data


def test_overwrite_replaces_content(local_store: LocalBlockstore) -> None:
    local_store.write_bytes("local://ns/x", b"first version, long")
    local_store.write_bytes("local://ns/x", b"second")
    assert local_store.read_bytes("local://ns/x") == b"second"


def test_read_missing_object_raises_object_not_found(local_store: LocalBlockstore) -> None:
    with pytest.raises(ObjectNotFound, match=r"local://ns/missing: no such object"):
        local_store.open_read("local://ns/missing")
    with pytest.raises(ObjectNotFound):
        local_store.read_bytes("local://ns/missing")


def test_failed_stream_leaves_no_final_file_and_no_temp_file(local_store: LocalBlockstore) -> None:
    uri = "local://ns/data/obj"
    with pytest.raises(ConnectionResetError):
        local_store.write_stream(uri, FailingStream(b"x" * 3000, ConnectionResetError), 10_000)
    assert local_store.stat(uri) is None
    assert all_files(Path(local_store.root)) == []  # temp file cleaned up too


def test_failed_overwrite_keeps_previous_version(local_store: LocalBlockstore) -> None:
    uri = "local://ns/data/obj"
    local_store.write_bytes(uri, b"previous")
    with pytest.raises(ConnectionResetError):
        local_store.write_stream(uri, FailingStream(b"partial new content", ConnectionResetError), None)
    assert local_store.read_bytes(uri) == b"previous"


def test_short_or_long_stream_is_a_size_mismatch_and_stores_nothing(local_store: LocalBlockstore) -> None:
    with pytest.raises(SizeMismatchError, match="expected 100 bytes but the source delivered 10"):
        local_store.write_stream("local://ns/short", io.BytesIO(b"0123456789"), 100)
    with pytest.raises(SizeMismatchError, match="more than 5"):
        local_store.write_stream("local://ns/long", io.BytesIO(b"0123456789"), 5)
    assert all_files(Path(local_store.root)) == []


@pytest.mark.parametrize(
    "uri",
    [
        "local://ns/../../etc/passwd",
        "local://../outside",
        "local://ns/a/../../../x",
        "local:///etc/passwd",
        "local:///tmp",
    ],
)
def test_escape_attempts_are_rejected(local_store: LocalBlockstore, uri: str) -> None:
    with pytest.raises(PathEscapeError):
        local_store.write_bytes(uri, b"evil")
    with pytest.raises(PathEscapeError):
        local_store.stat(uri)


def test_dotdot_error_message_is_clear(local_store: LocalBlockstore) -> None:
    with pytest.raises(PathEscapeError, match=r"'\.\.' path segments are not allowed"):
        local_store.read_bytes("local://ns/../x")


def test_symlink_out_of_root_is_rejected(local_store: LocalBlockstore, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    os.symlink(outside, Path(local_store.root) / "link")
    with pytest.raises(PathEscapeError, match="symbolic link"):
        local_store.read_bytes("local://link/secret")
    with pytest.raises(PathEscapeError):
        local_store.write_bytes("local://link/new", b"x")
    assert not (outside / "new").exists()


def test_absolute_physical_address_under_root_is_the_same_object(local_store: LocalBlockstore) -> None:
    local_store.write_bytes("local://repo1/data/p/o", b"payload")
    physical = f"local://{local_store.root}/repo1/data/p/o"  # how lakeFS reports physical addresses
    assert physical.startswith("local:///")
    assert local_store.read_bytes(physical) == b"payload"
    assert local_store.canonical_uri(physical) == "local://repo1/data/p/o"


def test_uris_naming_directories_or_other_schemes_are_rejected(local_store: LocalBlockstore) -> None:
    with pytest.raises(InvalidStorageURI, match="names a directory"):
        local_store.write_bytes("local://ns/dir/", b"x")
    with pytest.raises(InvalidStorageURI, match="store root"):
        local_store.write_bytes(f"local://{local_store.root}", b"x")
    with pytest.raises(InvalidStorageURI, match="only serves local://"):
        local_store.stat("s3://bucket/key")


def test_stat_of_a_directory_is_none_and_reading_it_fails_clearly(local_store: LocalBlockstore) -> None:
    local_store.write_bytes("local://ns/dir/file", b"x")
    assert local_store.stat("local://ns/dir") is None
    with pytest.raises(StorageError, match="names a directory"):
        local_store.read_bytes("local://ns/dir")


def test_list_prefix_is_a_string_prefix_and_recursive(local_store: LocalBlockstore) -> None:
    for key, body in {
        "ns/_lakefs/aaa": b"1",
        "ns/_lakefs/abb": b"22",
        "ns/data/p1/o1": b"333",
        "ns/data/p2/o2": b"4444",
        "ns2/data/other": b"5",
    }.items():
        local_store.write_bytes(f"local://{key}", body)
    listed = {i.uri: i.size for i in local_store.list_prefix("local://ns/")}
    assert listed == {
        "local://ns/_lakefs/aaa": 1,
        "local://ns/_lakefs/abb": 2,
        "local://ns/data/p1/o1": 3,
        "local://ns/data/p2/o2": 4,
    }
    assert [i.uri for i in local_store.list_prefix("local://ns/_lakefs/ab")] == ["local://ns/_lakefs/abb"]
    # without the trailing slash "ns" also matches "ns2", as an S3 prefix would
    assert "local://ns2/data/other" in {i.uri for i in local_store.list_prefix("local://ns")}
    assert list(local_store.list_prefix("local://missing/")) == []


def test_list_prefix_is_in_key_order_as_s3_lists(local_store: LocalBlockstore) -> None:
    keys = ["ns/a-b", "ns/a/c", "ns/a/d/e", "ns/a0", "ns/b", "ns/_lakefs/x"]
    for key in keys:
        local_store.write_bytes(f"local://{key}", b"x")
    listed = [i.uri.removeprefix("local://") for i in local_store.list_prefix("local://ns/")]
    assert listed == sorted(keys)  # "a-b" < "a/c" < "a0": a directory sorts as its name plus "/"


def test_list_prefix_absolute_form_returns_absolute_uris(local_store: LocalBlockstore) -> None:
    local_store.write_bytes("local://ns/data/o", b"x")
    listed = [i.uri for i in local_store.list_prefix(f"local://{local_store.root}/ns/")]
    assert listed == [f"local://{local_store.root}/ns/data/o"]


def test_list_skips_in_progress_temp_files(local_store: LocalBlockstore) -> None:
    local_store.write_bytes("local://ns/data/o", b"x")
    (Path(local_store.root) / "ns/data" / f"{TEMP_PREFIX}leftover").write_bytes(b"partial")
    assert [i.uri for i in local_store.list_prefix("local://ns/")] == ["local://ns/data/o"]


def test_list_rejects_escaping_prefix(local_store: LocalBlockstore) -> None:
    with pytest.raises(PathEscapeError):
        list(local_store.list_prefix("local://ns/../../"))


def test_server_side_copy_within_same_root(local_store: LocalBlockstore) -> None:
    other_view = LocalBlockstore(root=local_store.root)
    assert local_store.same_endpoint_as(other_view)
    assert not local_store.same_endpoint_as(LocalBlockstore(root=Path(local_store.root) / "sub"))
    local_store.write_bytes("local://a/obj", b"content")
    assert local_store.server_side_copy("local://a/obj", "local://b/obj").size == 7
    assert local_store.read_bytes("local://b/obj") == b"content"
    with pytest.raises(ObjectNotFound):
        local_store.server_side_copy("local://a/missing", "local://b/x")


def test_written_files_are_readable_by_others(local_store: LocalBlockstore) -> None:
    local_store.write_bytes("local://ns/o", b"x")
    mode = (Path(local_store.root) / "ns/o").stat().st_mode & 0o777
    assert mode == 0o644  # lakeFS (possibly another user) must be able to read mirrored objects


def test_empty_root_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="root directory"):
        LocalBlockstore(root="")
