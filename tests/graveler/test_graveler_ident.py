"""lakeFS identity encoding and IDs (design notes §1.5, §3.9)."""

from __future__ import annotations

import hashlib

import pytest

from lakefs_mirror_dagster.graveler import (
    IdentityWriter,
    SSTable,
    commit_id,
    entry_identity,
    entry_identity_legacy,
    iter_entries,
)
from tests.shared_fixtures import SSTABLE_FIXTURES

FIXTURES = SSTABLE_FIXTURES


def test_commit_id_matches_lakefs_unit_test_vector() -> None:
    # pkg/api/controller_test.go: TestController_CreateCommitRecord
    got = commit_id("Committer", "message", "metarangeId", 1_000_000_000, {"key": "value"}, ["parent1", "parent2"])
    assert got == "0c5f9d6fde638a6aa82840caf2485bdbe6ad0fc3f220ea88884df9ed99d7cf19"


def test_commit_id_depends_on_parent_order_and_every_field() -> None:
    ids = {
        commit_id("c", "m", "mr", 1, {"a": "b"}, ["p1", "p2"]),
        commit_id("c", "m", "mr", 1, {"a": "b"}, ["p2", "p1"]),
        commit_id("c", "m", "mr", 2, {"a": "b"}, ["p1", "p2"]),
        commit_id("c", "m", "mr", 1, {}, ["p1", "p2"]),
        commit_id("c", "m", "mr2", 1, {"a": "b"}, ["p1", "p2"]),
        commit_id("c", "m2", "mr", 1, {"a": "b"}, ["p1", "p2"]),
    }
    assert len(ids) == 6
    # a nil map and an empty map hash the same in Go
    assert commit_id("c", "m", "mr", 1, None, []) == commit_id("c", "m", "mr", 1, {}, [])


def test_primitive_encodings_are_bytewise_as_documented() -> None:
    # Build the expected stream by hand from §1.5 and compare digests.
    def i64(v: int) -> bytes:
        return b"\x02\x08" + (v % (1 << 64)).to_bytes(8, "big")

    def s(v: bytes) -> bytes:
        return b"\x01" + i64(len(v)) + v

    # Non-ASCII keys: Go sorts by bytes; "Z" (0x5a) < "a" (0x61) < "é" (0xc3 0xa9).
    meta = {"é": "1", "a": "2", "Z": "3"}
    expected = (
        i64(-2)
        + b"\x00" + i64(3) + b"xyz"
        + b"\x03" + i64(2) + s(b"p") + s("ü".encode())
        + b"\x04" + i64(3) + s(b"Z") + s(b"3") + s(b"a") + s(b"2") + s("é".encode()) + s(b"1")
        + b"\x05" + b"\x00" + i64(2) + b"\xaa\xbb"
    )  # fmt: skip
    got = (
        IdentityWriter()
        .add_int64(-2)
        .add_bytes(b"xyz")
        .add_string_slice(["p", "ü"])
        .add_string_map(meta)
        .add_embedded(b"\xaa\xbb")
        .digest()
    )
    assert got == hashlib.sha256(expected).digest()


def test_int64_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="out of range"):
        IdentityWriter().add_int64(1 << 63)


def test_content_type_only_counts_when_present() -> None:
    assert entry_identity(5, "etag", {}, "") == entry_identity(5, "etag", None)
    assert entry_identity(5, "etag", {}, "text/plain") != entry_identity(5, "etag", {})


def test_range_fixture_entries_follow_the_current_formula() -> None:
    sst = SSTable.from_bytes((FIXTURES / "range.sst").read_bytes())
    records = list(iter_entries(sst))
    assert len(records) == 2
    for _key, identity, e in records:
        assert identity == entry_identity(e.size, e.e_tag, e.metadata, e.content_type)
        assert identity != entry_identity_legacy(e.address, e.size, e.e_tag, e.metadata)


def test_ok1_fixture_entries_follow_the_pre_2021_formula() -> None:
    sst = SSTable.from_bytes((FIXTURES / "ok1.sst").read_bytes())
    records = list(iter_entries(sst))
    assert len(records) == 105
    for _key, identity, e in records:
        assert identity == entry_identity_legacy(e.address, e.size, e.e_tag, e.metadata)
        assert identity == e.legacy_identity()
        assert identity != e.identity()
