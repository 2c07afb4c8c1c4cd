"""sstable container: fixtures written by lakeFS, corruption, truncation, two-level indexes."""

from __future__ import annotations

import struct

import pytest

from lakefs_mirror_dagster.graveler import SSTable, SSTableError
from lakefs_mirror_dagster.graveler.sstable import mask_crc
from tests.shared_fixtures import SSTABLE_FIXTURES

from .sstable_writer import WriterOptions, fake_entry_records, masked_crc, write_lakefs_file, write_sstable

FIXTURES = SSTABLE_FIXTURES


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.mark.parametrize(
    ("name", "kind", "count"),
    [("range.sst", "ranges", 2), ("metarange.sst", "metaranges", 1), ("ok1.sst", "ranges", 105)],
)
def test_fixture_properties_and_record_counts(name: str, kind: str, count: int) -> None:
    sst = SSTable.from_bytes(_fixture(name))
    props = sst.user_properties
    assert props["type"] == kind
    assert int(props["count"]) == count
    assert sst.property_uvarint("rocksdb.num.entries") == count
    assert sst.properties["rocksdb.comparator"] == b"leveldb.BytewiseComparator"
    records = list(sst.iter_records())
    assert len(records) == count
    keys = [k for k, _ in records]
    assert keys == sorted(keys) and len(set(keys)) == count
    assert keys[-1] == props["max_key"].encode("utf-8", "surrogateescape")


def test_range_fixture_keys() -> None:
    keys = [k for k, _ in SSTable.from_bytes(_fixture("range.sst")).iter_records()]
    assert keys == [b"a/b/c/no", b"a/b/c/yes"]


def test_corrupted_byte_is_a_checksum_error() -> None:
    data = bytearray(_fixture("ok1.sst"))
    data[100] ^= 0x01  # inside the first data block
    sst = SSTable.from_bytes(bytes(data))
    with pytest.raises(SSTableError, match="checksum mismatch in data block 0"):
        list(sst.iter_records())


def test_corrupted_properties_block_fails_on_open() -> None:
    raw = _fixture("range.sst")
    sst = SSTable.from_bytes(raw)
    data = bytearray(raw)
    data[sst.metaindex_handle[0] - 20] ^= 0xFF  # properties block sits just before the metaindex
    with pytest.raises(SSTableError, match="checksum mismatch in properties block"):
        SSTable.from_bytes(bytes(data))


def test_checksums_can_be_skipped_explicitly() -> None:
    raw = _fixture("ok1.sst")
    sst = SSTable.from_bytes(raw)
    off, length = sst.data_block_handles()[1]
    data = bytearray(raw)
    data[off + length + 1] ^= 0xFF  # damage only the stored checksum of data block 1
    with pytest.raises(SSTableError, match="checksum mismatch in data block 1"):
        list(SSTable.from_bytes(bytes(data)).iter_records())
    unverified = SSTable.from_bytes(bytes(data), verify_checksums=False)
    assert list(unverified.iter_records()) == list(sst.iter_records())


@pytest.mark.parametrize("cut", [1, 30, 53, 500])
def test_truncated_file_is_a_clear_error(cut: int) -> None:
    data = _fixture("range.sst")[:-cut]
    with pytest.raises(SSTableError, match="truncated"):
        SSTable.from_bytes(data)


def test_tiny_and_empty_files() -> None:
    with pytest.raises(SSTableError, match="shorter than the 53-byte sstable footer"):
        SSTable.from_bytes(b"")
    with pytest.raises(SSTableError, match="bad magic"):
        SSTable.from_bytes(b"x" * 100)


def test_leveldb_magic_is_named() -> None:
    data = b"\x00" * 40 + bytes.fromhex("57fb808b247547db")
    with pytest.raises(SSTableError, match="LevelDB"):
        SSTable.from_bytes(b"\x00" * 5 + data)


def test_block_out_of_bounds_is_reported() -> None:
    data = bytearray(_fixture("range.sst"))
    footer = len(data) - 53
    # metaindex handle offset: make it point past the end (varint 0x7f = 127 offset, big length)
    data[footer + 1 : footer + 4] = bytes([0xFF, 0x7F, 0x21])
    with pytest.raises(SSTableError, match="extends past the data area"):
        SSTable.from_bytes(bytes(data))


def test_unknown_compression_is_named() -> None:
    raw = _fixture("range.sst")
    sst = SSTable.from_bytes(raw)
    off, length = sst.data_block_handles()[0]
    data = bytearray(raw)
    data[off + length] = 7  # zstd, with a valid checksum so the compression check is what fails
    data[off + length + 1 : off + length + 5] = struct.pack("<I", masked_crc(bytes(data[off : off + length + 1])))
    with pytest.raises(SSTableError, match=r"unsupported compression type 7 \(zstd\)"):
        list(SSTable.from_bytes(bytes(data)).iter_records())


def test_mask_matches_leveldb_definition() -> None:
    # LevelDB's crc32c::Mask of 0 is the delta itself; masking is a rotation plus a constant.
    assert mask_crc(0) == 0xA282EAD8
    assert mask_crc(1) == ((1 << 17) + 0xA282EAD8) & 0xFFFFFFFF


def test_writer_reproduces_lakefs_blocks_byte_for_byte() -> None:
    """Cross-check of the test writer: same records -> same data and index bytes as lakeFS wrote."""
    from lakefs_mirror_dagster.graveler import split_value

    for name, kind in [("range.sst", "ranges"), ("ok1.sst", "ranges"), ("metarange.sst", "metaranges")]:
        raw = _fixture(name)
        sst = SSTable.from_bytes(raw)
        records = [(k, *split_value(v)) for k, v in sst.iter_records()]
        written = write_lakefs_file(records, kind).data
        index_end = sst.index_handle[0] + sst.index_handle[1] + 5
        assert written[:index_end] == raw[:index_end], name
        assert len(written) == len(raw), name


def test_two_level_index_round_trip() -> None:
    records = fake_entry_records(3000)
    lf = write_lakefs_file(records, options=WriterOptions(index_block_size=512))
    sst = SSTable.from_bytes(lf.data)
    assert sst.index_type == 2
    assert (sst.property_uvarint("rocksdb.index.partitions") or 0) > 1
    got = list(sst.iter_records())
    assert [k for k, _ in got] == [k for k, _, _ in records]
    assert len(sst.data_block_handles()) == sst.property_uvarint("rocksdb.num.data.blocks")


def test_uncompressed_blocks_and_long_shared_prefixes() -> None:
    # Keys where one is a prefix of the next, so shared prefixes can reach into the 8-byte trailer.
    keys = [b"a", b"a\x01", b"a\x01\x00", b"a\x01\x00\x00\x00", b"b" * 300, b"b" * 300 + b"c"]
    values = [bytes([i]) * (i * 70) for i in range(len(keys))]
    data = write_sstable(list(zip(keys, values, strict=True)), {"type": b"ranges"}, WriterOptions(compress=False))
    sst = SSTable.from_bytes(data)
    assert list(sst.iter_records()) == list(zip(keys, values, strict=True))


def test_empty_table() -> None:
    data = write_sstable([], {"type": b"ranges"})
    assert list(SSTable.from_bytes(data).iter_records()) == []
