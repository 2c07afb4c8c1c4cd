"""Value envelopes, protobuf records and address rules (design notes §2.1, §3.8-§3.12)."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.graveler import (
    AddressType,
    RecordError,
    SSTable,
    VarintError,
    address_is_full,
    commit_id,
    decode_branch_data,
    decode_commit_data,
    decode_entry,
    decode_range_ref,
    decode_tag_data,
    decode_uvarint,
    decode_varint,
    encode_uvarint,
    encode_value,
    encode_varint,
    iter_range_refs,
    split_value,
)
from tests.shared_fixtures import SSTABLE_FIXTURES

from .sstable_writer import _pb_len, _pb_varint, encode_entry, encode_range_data, lakefs_value

FIXTURES = SSTABLE_FIXTURES


# --- varints -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
     ((1 << 64) - 1, b"\xff" * 9 + b"\x01")],
)  # fmt: skip
def test_uvarint_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_uvarint(value) == encoded
    assert decode_uvarint(encoded + b"junk", 0) == (value, len(encoded))


@pytest.mark.parametrize(
    ("value", "encoded"),
    # Go binary.PutVarint: zig-zag, so -1 -> 1, 1 -> 2, 64 -> 128 (two bytes)
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (64, b"\x80\x01"), (-65, b"\x81\x01"),
     (-(1 << 63), b"\xff" * 9 + b"\x01"), ((1 << 63) - 1, b"\xfe" + b"\xff" * 8 + b"\x01")],
)  # fmt: skip
def test_signed_varint_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))


def test_varint_errors() -> None:
    with pytest.raises(VarintError, match="runs past the end"):
        decode_uvarint(b"\x80\x80", 0)
    with pytest.raises(VarintError, match="overflows 64 bits"):
        decode_uvarint(b"\xff" * 9 + b"\x02", 0)
    with pytest.raises(VarintError, match="longer than 10 bytes"):
        decode_uvarint(b"\x80" * 10 + b"\x00", 0)
    with pytest.raises(VarintError):
        encode_uvarint(-1)


# --- value envelope ------------------------------------------------------------------------------


def test_split_value_round_trip_and_trailing_bytes() -> None:
    identity, data = b"i" * 32, b"d" * 200  # 200 needs a two-byte zig-zag length
    value = encode_value(identity, data)
    assert value[0] == 64  # 32 zig-zagged
    assert split_value(value) == (identity, data)
    assert split_value(value + b"extra") == (identity, data)  # lakeFS ignores trailing bytes
    assert split_value(encode_value(b"", b"")) == (b"", b"")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"", "truncated"),
        (b"\x40" + b"x" * 10, "identity length 32 is invalid"),
        (b"\x01", "identity length -1 is invalid"),
        (b"\x02a", "truncated"),
        (b"\x02a\x03", "data length -2 is invalid"),
        (b"\x80", "corrupt value"),
    ],
)
def test_split_value_rejects_bad_lengths(value: bytes, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        split_value(value)


# --- catalog.Entry -------------------------------------------------------------------------------


def test_decode_entry_all_fields() -> None:
    data = encode_entry(
        "data/gabc/def",
        5 << 33,
        e_tag="etag",
        last_modified=(1_700_000_000, 123_456_789),
        metadata={"b": "2", "a": "1"},
        address_type=1,
        content_type="text/csv",
    )
    e = decode_entry(data)
    assert (e.address, e.size, e.e_tag, e.address_type, e.content_type) == (
        "data/gabc/def", 5 * (1 << 33), "etag", AddressType.RELATIVE, "text/csv"
    )  # fmt: skip
    assert e.metadata == {"a": "1", "b": "2"}
    assert e.last_modified.isoformat() == "2023-11-14T22:13:20.123456+00:00"
    assert not e.is_full_address


def test_decode_entry_skips_unknown_fields_and_handles_negative_size() -> None:
    data = (
        _pb_len(1, b"s3://b/k")
        + _pb_varint(3, -5)  # 10-byte two's complement
        + _pb_varint(20, 99)  # unknown varint field with a two-byte tag
        + _pb_len(21, b"unknown")
        + b"\x41" + b"\x00" * 8  # field 8, fixed64
        + _pb_varint(6, 2)
    )  # fmt: skip
    e = decode_entry(data)
    assert (e.address, e.size, e.address_type, e.is_full_address) == ("s3://b/k", -5, 2, True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x0a\x05abc", "overruns"),
        (b"\x0a", "truncated"),
        (b"\x0a\x02\xff\xfe", "not valid UTF-8"),
        (b"\x0b", "unsupported wire type 3"),
        (b"\x02\x00", "field number 0"),
    ],
)
def test_decode_entry_rejects_malformed_protobuf(data: bytes, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        decode_entry(data)


@pytest.mark.parametrize(
    ("address", "full"),
    [
        ("s3://bucket/path/obj", True),
        ("S3://bucket/obj", True),
        ("gs://bucket/obj", True),
        ("local:///var/data/obj", True),
        ("https://acct.blob.core.windows.net/c/obj", True),
        ("mem://repo/obj", True),
        ("s3:bucket/obj", True),  # opaque URI: Go's ParseRequestURI accepts it
        ("4e068d1a46734113abd2218e87aace4c", False),  # pre-2021 relative UUID address
        ("data/gabc/def", False),
        ("/absolute/path", False),
        ("ftp://host/obj", False),
        ("s3://bucket/bad%zzescape", False),
        ("s3://buc ket/obj", False),
        ("", False),
    ],
)
def test_by_prefix_deprecated_address_resolution(address: str, full: bool) -> None:
    assert address_is_full(address, AddressType.BY_PREFIX_DEPRECATED) is full


def test_explicit_address_types_win_over_the_address_text() -> None:
    assert address_is_full("s3://bucket/obj", AddressType.RELATIVE) is False
    assert address_is_full("data/x", AddressType.FULL) is True
    with pytest.raises(ValueError, match="unknown entry address type 7"):
        address_is_full("data/x", 7)


# --- metarange records ---------------------------------------------------------------------------


def test_metarange_fixture_range_ref() -> None:
    refs = list(iter_range_refs(SSTable.from_bytes((FIXTURES / "metarange.sst").read_bytes())))
    assert len(refs) == 1
    ref = refs[0]
    assert ref.range_id == "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e"
    assert (ref.min_key, ref.max_key, ref.count) == (b"a/b/c/no", b"a/b/c/yes", 2)
    assert ref.estimated_size == 1190  # §3.11: not the range file's estimated_size_bytes (287)


def test_range_ref_validation() -> None:
    rid = b"ab" * 32
    ok = decode_range_ref(b"k", lakefs_value(rid, encode_range_data(b"a", b"", 10, 3)))
    assert ok.max_key == b"k"  # absent max_key: the record key is the max key
    with pytest.raises(RecordError, match="not a 64-hex-digit range ID"):
        decode_range_ref(b"k", lakefs_value(b"AB" * 32, b""))
    with pytest.raises(RecordError, match="not ASCII"):
        decode_range_ref(b"k", lakefs_value(b"\xff" * 64, b""))


# --- refs dump records ---------------------------------------------------------------------------


def test_commit_data_decodes_and_its_id_verifies() -> None:
    cid = "0c5f9d6fde638a6aa82840caf2485bdbe6ad0fc3f220ea88884df9ed99d7cf19"
    data = (
        _pb_len(1, cid.encode())
        + _pb_len(2, b"Committer")
        + _pb_len(3, b"message")
        + _pb_len(4, _pb_varint(1, 1_000_000_000) + _pb_varint(2, 500))
        + _pb_len(5, b"metarangeId")
        + _pb_len(6, _pb_len(1, b"key") + _pb_len(2, b"value"))
        + _pb_len(7, b"parent1")
        + _pb_len(7, b"parent2")
        + _pb_varint(8, 1)
        + _pb_varint(9, 7)
    )
    c = decode_commit_data(data)
    assert c.parents == ("parent1", "parent2")
    assert (c.version, c.generation, c.metadata) == (1, 7, {"key": "value"})
    assert c.computed_id() == cid == commit_id(c.committer, c.message, c.meta_range_id, 1_000_000_000, c.metadata,
                                               c.parents)  # fmt: skip
    tampered = decode_commit_data(data.replace(b"message", b"messagE"))
    assert tampered.computed_id() != tampered.id


def test_branch_and_tag_data() -> None:
    b = decode_branch_data(
        _pb_len(1, b"main") + _pb_len(2, b"c1") + _pb_len(3, b"tok") + _pb_len(4, b"s1") + _pb_len(4, b"s2")
        + _pb_varint(5, 1)
    )  # fmt: skip
    assert (b.id, b.commit_id, b.staging_token, b.sealed_tokens, b.hidden) == ("main", "c1", "tok", ("s1", "s2"), True)
    t = decode_tag_data(_pb_len(1, b"v1") + _pb_len(2, b"c2"))
    assert (t.id, t.commit_id) == ("v1", "c2")
    with pytest.raises(RecordError, match="wrong wire type"):
        decode_tag_data(_pb_varint(1, 5))
