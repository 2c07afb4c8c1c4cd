"""A metarange decoded as a successor of the one before it reads exactly as the file alone, and names what it adds.

``decode_metarange(..., like=previous)`` takes the data blocks the two files share from ``previous`` (neither
hashed nor decoded again); whatever the change (an appended range, a rewritten one in the middle, a removed one),
its ranges, its refusals and ``changed_from`` must be what decoding the file alone and comparing sets give.
"""

from __future__ import annotations

import hashlib
import random

import pytest

from lakefs_mirror_dagster.graveler import (
    RangeIdMismatchError,
    RangeRef,
    SSTable,
    SSTableError,
    decode_metarange,
    iter_range_refs,
)

from .sstable_writer import encode_range_data, write_lakefs_file

Record = tuple[bytes, bytes, bytes]


def _range(i: int, salt: str = "") -> Record:
    """The record of a range holding keys ``log/<i>`` to ``log/<i>.z`` (one per commit of an append-only log)."""
    min_key, max_key = f"log/{i:06d}".encode(), f"log/{i:06d}.z".encode()
    range_id = hashlib.sha256(f"{i}{salt}".encode()).hexdigest().encode()
    return max_key, range_id, encode_range_data(min_key, max_key, 1000 + i, 1)


def _metarange(records: list[Record]) -> tuple[bytes, str]:
    built = write_lakefs_file(records, "metaranges")
    return built.data, built.range_id


def _alone(data: bytes) -> list[tuple[str, bytes, bytes]]:
    return [(r.range_id, r.min_key, r.max_key) for r in iter_range_refs(SSTable.from_bytes(data))]


def _listed(refs: list[RangeRef]) -> list[tuple[str, bytes, bytes]]:
    return [(r.range_id, r.min_key, r.max_key) for r in refs]


def test_an_appended_range_is_the_only_one_decoded_and_the_only_change() -> None:
    records = [_range(i) for i in range(2000)]
    before = decode_metarange(*_metarange(records))
    data, metarange_id = _metarange([*records, _range(2000)])

    after = decode_metarange(data, metarange_id, like=before)

    assert _listed(after.refs) == _alone(data)
    assert len(after.verified.blocks) > 10, "the test needs a metarange of many blocks"
    shared = sum(1 for mine, theirs in zip(after.block_refs, before.block_refs, strict=False) if mine is theirs)
    assert shared == len(after.block_refs) - 1, "blocks the two files share were decoded again"
    assert _listed(after.changed_from(before)) == _alone(data)[-1:]


@pytest.mark.parametrize("change", ["rewrite", "remove", "insert"])
def test_a_change_in_the_middle_names_exactly_what_the_new_file_adds(change: str) -> None:
    records = [_range(i) for i in range(0, 3000, 2)]
    before_data, before_id = _metarange(records)
    changed = list(records)
    if change == "rewrite":
        changed[700] = _range(1400, salt="rewritten")
    elif change == "remove":
        del changed[700]
    else:
        changed.insert(700, _range(1399))
    data, metarange_id = _metarange(changed)
    before = decode_metarange(before_data, before_id)

    after = decode_metarange(data, metarange_id, like=before)

    assert _listed(after.refs) == _alone(data)
    old = {r[0] for r in _alone(before_data)}
    assert _listed(after.changed_from(before)) == [r for r in _alone(data) if r[0] not in old]
    assert len(after.changed_from(before)) == (0 if change == "remove" else 1)


def test_a_successor_that_does_not_hash_to_its_id_is_refused_even_where_it_shares_blocks() -> None:
    records = [_range(i) for i in range(2000)]
    before = decode_metarange(*_metarange(records))
    data, _ = _metarange([*records, _range(2000)])
    _, other_id = _metarange([*records, _range(2001)])
    with pytest.raises(RangeIdMismatchError):
        decode_metarange(data, other_id, like=before)


def test_a_range_file_is_not_taken_for_a_metarange() -> None:
    built = write_lakefs_file([(b"k", b"i" * 32, b"")], "ranges")
    with pytest.raises(SSTableError, match="metaranges"):
        decode_metarange(built.data, built.range_id)


def test_overlapping_finds_by_bisection_what_a_scan_finds() -> None:
    metarange = decode_metarange(*_metarange([_range(i) for i in range(0, 3000, 3)]))
    rnd = random.Random(5)
    for _ in range(200):
        low, high = sorted(rnd.randrange(0, 3100) for _ in range(2))
        ref = RangeRef("x" * 64, f"log/{low:06d}".encode(), f"log/{high:06d}".encode(), 0, 0)
        scan = [r for r in metarange.refs if r.min_key <= ref.max_key and ref.min_key <= r.max_key]
        assert metarange.overlapping(ref) == scan
