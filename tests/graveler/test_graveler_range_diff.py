"""Comparing a range with the ranges it rewrites by raw records: only records that differ are decoded."""

from __future__ import annotations

import random

import pytest

from lakefs_mirror_dagster.graveler import (
    RangeIdMismatchError,
    SSTable,
    SSTableError,
    changed_entries,
    entry_location,
    iter_entry_locations,
    object_blocks,
    verified_records,
)
from lakefs_mirror_dagster.graveler import ranges as ranges_module

from .sstable_writer import encode_entry, fake_entry_records, write_lakefs_file

Record = tuple[bytes, bytes, bytes]  # (key, identity, entry data) as the test writer takes them


def _relative(i: int, rnd: random.Random) -> Record:
    data = encode_entry(f"data/g{rnd.getrandbits(60):015x}", rnd.randint(1, 1 << 30), e_tag=f"{i:032x}", address_type=1)
    return f"k/{i:07d}".encode(), rnd.randbytes(32), data


def _old_work(new: bytes, bases: list[bytes]) -> list[tuple[bytes, str, bool, int, str]]:
    """What the engine worked on before raw comparison: entries not equal (by location) to a relative entry of
    a base. Kept here as the reference the new path is checked against."""
    present = {e for b in bases for e in iter_entry_locations(SSTable.from_bytes(b)) if not e[2]}
    return [e for e in iter_entry_locations(SSTable.from_bytes(new)) if e not in present]


def test_one_changed_entry_of_a_rewritten_range_is_the_only_one_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    rnd = random.Random(1)
    base_records = [_relative(i, rnd) for i in range(0, 4000, 2)]
    new_records = list(base_records)
    new_records.insert(701, _relative(1401, rnd))  # lakeFS rewrote the range to insert one key
    key, identity, _ = new_records[1500]
    new_records[1500] = (key, identity, encode_entry("data/moved", 7, address_type=1))  # and one entry changed
    base, new = write_lakefs_file(base_records), write_lakefs_file(new_records)

    decoded: list[bytes] = []
    real = ranges_module.entry_location

    def counting(key: bytes, value: bytes) -> tuple[bytes, str, bool, int, str]:
        decoded.append(key)
        return real(key, value)

    monkeypatch.setattr(ranges_module, "entry_location", counting)
    changed, unchanged = changed_entries(
        object_blocks(new.data, new.range_id), [object_blocks(base.data, base.range_id)]
    )

    assert [e[0] for e in changed] == [b"k/0001401", key]
    assert changed[1][1:4] == ("data/moved", False, 7)
    assert unchanged == len(base_records) - 1
    assert decoded == [b"k/0001401", key], "entries byte-identical to the base must not be decoded"


@pytest.mark.parametrize("walk", ["c", "python"])
def test_same_work_as_the_location_comparison_on_random_ranges(walk: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random rewrites (inserts, deletes, changed addresses, sizes or ETags, several overlapping bases): the raw
    comparison yields exactly the entries the old location comparison did, in key order, through the C merge
    and through its Python reference alike."""
    if walk == "python":
        monkeypatch.setattr(ranges_module, "_native_changed_records", None)
    elif ranges_module._native_changed_records is None:
        pytest.skip("graveler/_native.c was not built")
    for seed in range(25):
        rnd = random.Random(seed)
        n = rnd.randint(1, 600)
        base_records = sorted({r[0]: r for r in (_relative(rnd.randrange(10 * n), rnd) for _ in range(n))}.values())
        work = list(base_records)
        for _ in range(rnd.randint(0, 30)):
            i = rnd.randrange(len(work) + 1)
            op = rnd.choice(["insert", "delete", "change"])
            if op == "insert":
                work.insert(i, _relative(rnd.randrange(10 * n), rnd))
            elif work and i < len(work):
                if op == "delete":
                    del work[i]
                else:
                    key, identity, _ = work[i]
                    work[i] = (key, identity, encode_entry(f"data/c{seed}-{i}", rnd.randint(1, 99), address_type=1))
        new_records = sorted({r[0]: r for r in work}.values())  # one record per key, as lakeFS writes
        if not new_records:
            continue
        split = rnd.randint(0, len(base_records))  # the base as one range or as two (a merge of two ranges)
        parts = [p for p in (base_records[:split], base_records[split:]) if p]
        bases = [write_lakefs_file(p) for p in parts]
        new = write_lakefs_file(new_records)

        changed, unchanged = changed_entries(
            object_blocks(new.data, new.range_id), [object_blocks(b.data, b.range_id) for b in bases]
        )

        assert changed == _old_work(new.data, [b.data for b in bases]), f"seed {seed}"
        assert unchanged + len(changed) == len(new_records)


def test_a_change_outside_the_location_fields_counts_as_changed() -> None:
    """Byte-identical, not location-equal: new metadata or modification time is a change (never the reverse)."""
    key = b"k/1"
    before = encode_entry("data/a", 5, e_tag="e", address_type=1)
    after = encode_entry("data/a", 5, e_tag="e", address_type=1, metadata={"owner": "etl"})
    base = write_lakefs_file([(key, bytes(32), before)])
    new = write_lakefs_file([(key, bytes(32), after)])
    changed, unchanged = changed_entries(
        object_blocks(new.data, new.range_id), [object_blocks(base.data, base.range_id)]
    )
    assert (changed, unchanged) == ([(key, "data/a", False, 5, "e")], 0)
    same_identity_other_value = write_lakefs_file([(key, b"\x01" * 32, before)])
    changed, _ = changed_entries(
        object_blocks(same_identity_other_value.data, same_identity_other_value.range_id),
        [object_blocks(base.data, base.range_id)],
    )
    assert len(changed) == 1, "the identity is part of the raw value"


def test_without_bases_every_entry_is_decoded_as_the_fast_path_does() -> None:
    lf = write_lakefs_file(fake_entry_records(3000))
    changed, unchanged = changed_entries(object_blocks(lf.data, lf.range_id), [])
    assert unchanged == 0
    assert changed == list(iter_entry_locations(SSTable.from_bytes(lf.data)))


def test_verified_records_are_the_files_records_and_a_wrong_id_is_refused() -> None:
    lf = write_lakefs_file(fake_entry_records(500))
    sst, records = verified_records(lf.data, lf.range_id)
    assert records == list(sst.iter_records()) and len(records) == 500
    with pytest.raises(RangeIdMismatchError, match="not to the expected ID"):
        verified_records(lf.data, "00" * 32)
    with pytest.raises(RangeIdMismatchError):
        object_blocks(lf.data, "00" * 32)


def test_object_blocks_refuse_a_metarange() -> None:
    meta = write_lakefs_file([(b"k", b"", b"")], file_type="metaranges")
    with pytest.raises(SSTableError, match="expected a file of type 'ranges'"):
        object_blocks(meta.data, meta.range_id)


def test_a_corrupt_changed_value_is_an_sstable_error() -> None:
    with pytest.raises(SSTableError, match="record b'a': corrupt value"):
        entry_location(b"a", b"\x02")  # identity length 1, then nothing
    with pytest.raises(SSTableError, match="overruns"):
        entry_location(b"a", b"\x00\x06" + b"\x0a\x7f\x00")  # address length past the entry's end
