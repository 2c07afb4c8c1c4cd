"""The C loops of reading range files (``graveler/_native.c``) agree with the Python ones they speed up.

The Python walk of a data block and the Python range-ID hash input are the reference: on valid blocks both
give the same records and bytes, on corrupt blocks both refuse (the C walk must never accept a block the
Python one refuses, nor the other way round). The C merge of a range with its bases is compared with its
Python reference in test_graveler_range_diff.py, on random rewrites.
"""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest

from lakefs_mirror_dagster.graveler import SSTable, SSTableError, range_id, ranges, sstable
from tests.graveler.sstable_writer import WriterOptions, _BlockBuilder, fake_entry_records, uvarint, write_lakefs_file

try:
    from lakefs_mirror_dagster.graveler import _native as native
except ImportError:  # the first test says so; the others need it
    native = None
needs_native = pytest.mark.skipif(native is None, reason="graveler/_native.c was not built (pip install needs gcc)")

SET = bytes([1]) + bytes(7)
MiB = 1 << 20


def _python_records(block: bytes) -> list[tuple[bytes, bytes]]:
    return list(sstable._data_block_records(block))


def _block(internal_keys: list[bytes], restart_interval: int = 16) -> bytes:
    builder = _BlockBuilder(restart_interval)
    for i, key in enumerate(internal_keys):
        builder.add(key, b"value-%d" % i)
    return builder.finish()


def _outcome(walk, block: bytes) -> tuple[str, object]:  # type: ignore[no-untyped-def]
    try:
        return "records", walk(block)
    except (SSTableError, ValueError, IndexError) as exc:
        return "refused", type(exc).__name__


def test_the_package_was_built_with_its_c_loops() -> None:
    # scripts/dev installs with gcc present: a silent fallback to the Python loops would cost ~4x per range.
    assert native is not None, "graveler/_native.c was not built: pip install -e . needs gcc and Python's headers"
    assert sstable._native_block_records is native.data_block_records
    assert range_id._native_blocks_hash_input is native.blocks_hash_input
    assert ranges._native_changed_records is native.changed_records
    assert sstable._native_read_blocks is native.read_blocks


@needs_native
def test_a_generated_range_reads_the_same_through_both_walks() -> None:
    sst = SSTable.from_bytes(write_lakefs_file(fake_entry_records(3_000)).data)
    blocks = list(sst.iter_data_blocks())
    assert len(blocks) > 10
    for block in blocks:
        assert native.data_block_records(block) == _python_records(block)


@needs_native
def test_keys_that_share_into_the_previous_trailer_read_the_same() -> None:
    # "ab" then "ab\x01\x00": the second key's shared prefix covers bytes of the first one's trailer.
    keys = [b"ab" + SET, b"ab\x01\x00" + SET, b"ab\x01\x00\x00\x00" + SET, b"b" + SET]
    block = _block(keys, restart_interval=16)
    expected = [(k[:-8], b"value-%d" % i) for i, k in enumerate(keys)]
    assert native.data_block_records(block) == _python_records(block) == expected


@needs_native
def test_a_record_that_is_not_a_set_is_refused_by_both() -> None:
    block = _block([b"a" + SET, b"b" + bytes([0]) + bytes(7)])  # kind 0: a DELETE
    with pytest.raises(ValueError, match=r"record b'b' has key kind 0"):
        native.data_block_records(block)
    with pytest.raises(SSTableError, match=r"record b'b' has key kind 0"):
        _python_records(block)


@needs_native
def test_through_sstable_a_corrupt_block_names_its_index() -> None:
    block = bytearray(_block([b"a" + SET, b"b" + SET]))
    block[2] = 0x7F  # the first key's length now runs past the block
    with pytest.raises(SSTableError, match=r"^data block 3: "):
        sstable.block_records(bytes(block), 3)


@needs_native
def test_corrupt_blocks_are_refused_by_both_walks_alike() -> None:
    rnd = random.Random(1117)
    keys = sorted({b"dir-%d/file-%05d" % (rnd.randrange(4), rnd.randrange(10**5)) for _ in range(60)})
    good = _block([k + SET for k in keys], restart_interval=4)
    assert native.data_block_records(good) == _python_records(good)
    agreed = {"records": 0, "refused": 0}
    for _ in range(3_000):
        block = bytearray(good)
        for _ in range(rnd.randrange(1, 4)):
            if not block:
                break
            choice = rnd.random()
            if choice < 0.6:
                block[rnd.randrange(len(block))] = rnd.randrange(256)
            elif choice < 0.8:
                del block[rnd.randrange(len(block)) :]
            else:
                block[rnd.randrange(len(block))] |= 0x80  # a varint that goes on
        mutated = bytes(block)
        c_outcome = _outcome(native.data_block_records, mutated)
        py_outcome = _outcome(_python_records, mutated)
        assert c_outcome[0] == py_outcome[0], (mutated.hex(), c_outcome, py_outcome)
        if c_outcome[0] == "records":
            assert c_outcome[1] == py_outcome[1], mutated.hex()
        agreed[c_outcome[0]] += 1
    assert agreed["records"] > 100 and agreed["refused"] > 100  # both kinds of outcome were exercised


@needs_native
def test_the_hash_input_of_blocks_is_the_python_reference_s() -> None:
    sst = SSTable.from_bytes(write_lakefs_file(fake_entry_records(2_000)).data)
    blocks = sst.data_blocks()
    assert native.blocks_hash_input(blocks) == range_id._python_blocks_hash_input(blocks)
    assert native.blocks_hash_input([]) == b""
    odd = [_block([b"" + SET, b"k" + SET]), _block([b"\x00\xff" * 70 + SET])]
    assert native.blocks_hash_input(odd) == range_id._python_blocks_hash_input(odd)
    assert native.blocks_hash_input([_block([b"ab" + SET])]) == b"2ab|7value-0|"


@needs_native
def test_a_corrupt_block_in_a_list_is_refused_with_its_number() -> None:
    good = _block([b"a" + SET, b"b" + SET])
    bad = bytearray(good)
    bad[2] = 0x7F
    with pytest.raises(ValueError, match=r"^data block 1: "):
        native.blocks_hash_input([good, bytes(bad)])
    with pytest.raises(SSTableError, match=r"^data block 1: "):
        range_id._blocks_hash_input([good, bytes(bad)])
    with pytest.raises(SSTableError, match=r"^data block 1: "):
        range_id._python_blocks_hash_input([good, bytes(bad)])


@needs_native
def test_a_changed_record_is_found_in_any_base_order() -> None:
    base_a = [_block([b"a" + SET, b"c" + SET])]
    base_b = [_block([b"x" + SET, b"z" + SET])]
    new = [_block([b"a" + SET, b"b" + SET, b"c" + SET]), _block([b"x" + SET, b"y" + SET, b"z" + SET])]
    for bases in ([base_a, base_b], [base_b, base_a]):
        changed, unchanged = native.changed_records(new, bases)
        assert (changed, unchanged) == ranges._python_changed_records(new, bases)
        # the values are "value-<position in its block>": b and y moved the others' positions, c and z changed
        assert [k for k, _ in changed] == [b"b", b"c", b"y", b"z"] and unchanged == 2


@needs_native
@pytest.mark.parametrize(
    "call",
    [
        lambda: native.blocks_hash_input([b"not a block at all"[:3]]),
        lambda: native.blocks_hash_input(["text"]),  # type: ignore[list-item]
        lambda: native.changed_records([], ((b"",),)),  # type: ignore[arg-type]
        lambda: native.data_block_records(bytearray(8)),  # type: ignore[arg-type]
    ],
)
def test_what_is_not_blocks_is_refused(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((TypeError, ValueError)):
        call()


@needs_native
def test_index_blocks_give_the_handles_the_python_walk_gives() -> None:
    sst = SSTable.from_bytes(write_lakefs_file(fake_entry_records(5_000)).data)
    assert sst.index_type == 2  # two-level: a top index of partitions, each an index block
    top = sst.read_block(sst.index_handle)
    partitions = native.index_block_handles(top)
    assert partitions == sstable._python_index_block_handles(top, "index block") and len(partitions) > 1
    for handle in partitions:
        block = sst.read_block(handle)
        assert native.index_block_handles(block) == sstable._python_index_block_handles(block, "partition")
    rnd = random.Random(5)
    outcomes = set()
    for _ in range(2_000):
        block = bytearray(top)
        block[rnd.randrange(len(block))] = rnd.randrange(256)
        mutated = bytes(block)
        c_outcome = _outcome(native.index_block_handles, mutated)
        py_outcome = _outcome(lambda b: sstable._python_index_block_handles(b, "index"), mutated)
        assert c_outcome[0] == py_outcome[0], mutated.hex()
        if c_outcome[0] == "records":
            assert c_outcome[1] == py_outcome[1]
        outcomes.add(c_outcome[0])
    assert outcomes == {"records", "refused"}


def _python_blocks(data: bytes) -> list[bytes]:
    return list(SSTable.from_bytes(data).iter_data_blocks())


def _c_blocks(data: bytes) -> list[bytes]:
    return SSTable.from_bytes(data).data_blocks()


@needs_native
@pytest.mark.parametrize("compress", [True, False], ids=["snappy", "uncompressed"])
def test_data_blocks_read_the_same_through_both_readers(compress: bool) -> None:
    data = write_lakefs_file(fake_entry_records(4_000), options=WriterOptions(compress=compress)).data
    blocks = _c_blocks(data)
    assert len(blocks) > 20 and blocks == _python_blocks(data)
    unchecked = SSTable.from_bytes(data, verify_checksums=False)
    assert unchecked.data_blocks() == blocks


@needs_native
def test_snappy_is_decompressed_as_cramjam_does_on_any_bytes() -> None:
    import cramjam

    rnd = random.Random(2024)
    for size in (0, 1, 15, 16, 17, 60, 61, 255, 256, 4096, 70_000):
        raw = bytes(rnd.choice(b"ab\x00/0123456789") for _ in range(size))  # repetitive: long, overlapping copies
        for payload in (raw, rnd.randbytes(size), raw * 3):
            packed = bytes(cramjam.snappy.compress_raw(payload))
            assert _read_one(packed, 1) == payload


def _read_one(body: bytes, block_type: int, *, verify: bool = False) -> bytes:
    """``body`` as the only block of a file: the trailer, then padding standing in for the index and footer."""
    data = body + bytes([block_type]) + bytes(4) + bytes(64)
    [block] = native.read_blocks(data, [(0, len(body))], len(body) + 5, verify)
    return block


@needs_native
def test_damaged_blocks_are_refused_by_both_readers_alike() -> None:
    good = write_lakefs_file(fake_entry_records(300)).data
    sst = SSTable.from_bytes(good)
    handles = sst.data_block_handles()
    rnd = random.Random(77)
    outcomes = {"records": 0, "refused": 0}
    for i in range(3_000):
        damaged = bytearray(good)
        offset, length = handles[rnd.randrange(len(handles))]
        for _ in range(rnd.randrange(1, 3)):
            damaged[offset + rnd.randrange(length + 5)] = rnd.randrange(256)
        for verify in (True, False):  # unchecked: the decompressor itself meets the damage
            table = SSTable.from_bytes(bytes(damaged), verify_checksums=verify)
            c = _outcome(SSTable.data_blocks, table)
            py = _outcome(lambda t: list(t.iter_data_blocks()), table)
            assert c[0] == py[0], (i, verify, c, py)
            if c[0] == "records":
                assert c[1] == py[1]
            outcomes[c[0]] += 1
    assert outcomes["records"] > 100 and outcomes["refused"] > 100


@needs_native
def test_a_block_past_the_data_area_or_of_an_unknown_compression_is_refused() -> None:
    data = write_lakefs_file(fake_entry_records(50)).data
    sst = SSTable.from_bytes(data)
    [(offset, length), *_] = sst.data_block_handles()
    with pytest.raises(ValueError, match="extends past the data area"):
        native.read_blocks(data, [(offset, sst._footer_start)], sst._footer_start, True)
    with pytest.raises(ValueError, match="checksum mismatch in data block 0"):
        native.read_blocks(data[:offset] + b"\xff" + data[offset + 1 :], [(offset, length)], sst._footer_start, True)
    with pytest.raises(ValueError, match="unsupported compression type 7"):
        _read_one(b"abc", 7)
    with pytest.raises(ValueError, match="snappy decompression failed"):
        _read_one(b"\x05\x00a", 1)  # says 5 bytes, holds 1


# Found by tests/graveler/fuzz_native.py (the C reader built with ASan and UBSan against the Python loops).
@needs_native
def test_an_entry_whose_lengths_run_into_the_restart_array_is_refused_by_both() -> None:
    """A restart count that leaves one byte for the entries: the entry's varints end past it. The C walk took the
    negative room left for the key as a huge one and read the value past the block's end."""
    body = b"\x00" + uvarint(58) + uvarint(5000) + bytes(60)
    body += bytes(-(len(body) - 1) % 4)
    block = body + struct.pack("<I", (len(body) - 1) // 4)  # the restart array covers all but the first byte
    with pytest.raises(ValueError, match="overruns"):
        native.data_block_records(block)
    with pytest.raises(SSTableError, match="overruns"):
        _python_records(block)
    index = b"\x00" + uvarint(3) + uvarint(2) + b"abc" + uvarint(1) + uvarint(1) + bytes(2)
    index += struct.pack("<I", (len(index) - 1) // 4)  # the same in an index block: it gave a handle (1, 1)
    assert _outcome(native.index_block_handles, index)[0] == "refused"
    assert _outcome(lambda b: sstable._python_index_block_handles(b, "index"), index)[0] == "refused"


@needs_native
def test_keys_out_of_order_are_refused_by_both_merges_wherever_they_are() -> None:
    """The C merge walks keys in order; the Python reference looks them up: both refuse a range whose keys go
    back, in the new range or in a base, even past the last key the merge needed."""
    ordered = [_block([b"a" + SET, b"b" + SET])]
    for blocks, bases in (
        ([_block([b"b" + SET, b"a" + SET])], [ordered]),
        ([_block([b"a" + SET])], [[_block([b"a" + SET, b"c" + SET, b"b" + SET])]]),
    ):
        with pytest.raises(ValueError, match="not greater than the key before it"):
            native.changed_records(blocks, bases)
        with pytest.raises(SSTableError, match="not greater than the key before it"):
            ranges._python_changed_records(blocks, bases)
    assert native.changed_records(ordered, [ordered]) == ([], 2)


@needs_native
def test_a_snappy_length_no_block_can_hold_is_refused_before_its_buffer_is_allocated() -> None:
    """A 7-byte block claiming 4 GiB: refused before allocating (it was allocated, then found short)."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="snappy decompression failed"):
            _read_one(uvarint(0xFFFFFFFF) + b"\x00a", 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB, f"{peak} bytes allocated for a 7-byte block"
