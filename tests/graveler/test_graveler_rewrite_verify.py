"""Checking a rewritten range against the range it replaces gives what checking it alone gives, for less.

lakeFS writes the data blocks before an inserted key exactly as they were: ``verify_range(..., like=base)`` takes
those from the base and resumes the hash from the base's state there. Whatever the rewrite, the result (blocks,
refusals) must be the one a check of the file alone gives.
"""

from __future__ import annotations

import random

import pytest

from lakefs_mirror_dagster.graveler import RangeIdMismatchError, SSTableError
from lakefs_mirror_dagster.graveler import range_id as range_id_module
from lakefs_mirror_dagster.graveler.range_id import _python_common_prefix, verify_range

from .sstable_writer import encode_entry, write_lakefs_file

Record = tuple[bytes, bytes, bytes]


def _record(i: int, rnd: random.Random) -> Record:
    data = encode_entry(f"data/g{rnd.getrandbits(60):015x}", rnd.randint(1, 1 << 30), e_tag=f"{i:032x}", address_type=1)
    return f"k/{i:07d}".encode(), rnd.randbytes(32), data


def _records(n: int, seed: int) -> list[Record]:
    rnd = random.Random(seed)
    return [_record(i, rnd) for i in range(0, 2 * n, 2)]


def test_an_insert_reuses_the_blocks_before_it_and_checks_out_as_the_file_alone() -> None:
    base_records = _records(6000, 1)
    base = write_lakefs_file(base_records)
    rewritten = list(base_records)
    rewritten.insert(4501, _record(9001, random.Random(2)))  # k/0009001: between k/0009000 and k/0009002
    new = write_lakefs_file(rewritten)

    verified_base = verify_range(base.data, base.range_id)
    alone = verify_range(new.data, new.range_id)
    like = verify_range(new.data, new.range_id, like=verified_base)

    assert like.blocks == alone.blocks and like.handles == alone.handles
    shared = sum(1 for mine, theirs in zip(like.blocks, verified_base.blocks, strict=False) if mine is theirs)
    assert shared > len(alone.blocks) // 2, "the blocks before the insert were decompressed again"
    # a later rewrite can resume from these states: they are the states the file alone reaches
    assert [s.digest() for s in like.states] == [s.digest() for s in alone.states]


def test_blocks_are_not_hashed_again_before_the_last_batch_boundary_they_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base_records = _records(6000, 3)
    base, new = write_lakefs_file(base_records), write_lakefs_file(base_records[:-1])  # the last key deleted
    verified_base = verify_range(base.data, base.range_id)
    hashed: list[int] = []
    real = range_id_module._blocks_hash_input

    def counting(blocks: list[bytes]) -> bytes:
        hashed.append(len(blocks))
        return real(blocks)

    monkeypatch.setattr(range_id_module, "_blocks_hash_input", counting)
    verify_range(new.data, new.range_id, like=verified_base)
    assert sum(hashed) <= range_id_module._BATCH + 1, f"{sum(hashed)} blocks hashed of {len(verified_base.blocks)}"


@pytest.mark.parametrize("seed", range(12))
def test_random_rewrites_check_out_exactly_as_the_file_alone(seed: int) -> None:
    rnd = random.Random(seed)
    base_records = _records(rnd.randint(1, 3000), seed)
    work = list(base_records)
    for _ in range(rnd.randint(0, 5)):
        i = rnd.randrange(len(work) + 1)
        op = rnd.choice(["insert", "delete", "change"])
        if op == "insert":
            work.insert(i, _record(rnd.randrange(2 * len(base_records) + 1), rnd))
        elif i < len(work):
            if op == "delete":
                del work[i]
            else:
                key, identity, _ = work[i]
                work[i] = (key, identity, encode_entry(f"data/c{seed}", rnd.randint(1, 99), address_type=1))
    new_records = sorted({r[0]: r for r in work}.values())
    if not new_records:
        return
    base, new = write_lakefs_file(base_records), write_lakefs_file(new_records)
    verified_base = verify_range(base.data, base.range_id)
    assert (
        verify_range(new.data, new.range_id, like=verified_base).blocks == verify_range(new.data, new.range_id).blocks
    )
    with pytest.raises(RangeIdMismatchError):
        verify_range(new.data, base.range_id if new.range_id != base.range_id else "00" * 32, like=verified_base)


def test_damage_after_the_shared_blocks_is_refused_as_without_a_base() -> None:
    base_records = _records(4000, 5)
    rewritten = list(base_records)
    rewritten.insert(3000, _record(5999, random.Random(6)))
    base, new = write_lakefs_file(base_records), write_lakefs_file(rewritten)
    verified_base = verify_range(base.data, base.range_id)
    rnd = random.Random(7)
    for _ in range(200):
        damaged = bytearray(new.data)
        at = rnd.randrange(len(damaged) // 2, len(damaged))  # past the shared half
        damaged[at] ^= 1 << rnd.randrange(8)
        outcomes = []
        for like in (None, verified_base):
            try:
                outcomes.append(verify_range(bytes(damaged), new.range_id, like=like).blocks)
            except SSTableError as exc:
                outcomes.append(type(exc))
        assert outcomes[0] == outcomes[1], at


def test_the_same_file_as_its_base_checks_out_and_a_different_file_shares_nothing() -> None:
    base = write_lakefs_file(_records(3000, 8))
    verified = verify_range(base.data, base.range_id)
    assert verify_range(base.data, base.range_id, like=verified).blocks == verified.blocks
    other = write_lakefs_file(_records(3000, 9))
    assert (
        verify_range(other.data, other.range_id, like=verified).blocks
        == verify_range(other.data, other.range_id).blocks
    )


@pytest.mark.parametrize(("a", "b"), [(b"", b""), (b"abc", b"abd"), (b"abc", b"abcdef"), (bytes(9000), bytes(9000))])
def test_the_common_prefix_is_the_python_reference_s(a: bytes, b: bytes) -> None:
    assert range_id_module._common_prefix(a, b) == _python_common_prefix(a, b)
    rnd = random.Random(len(a))
    long = rnd.randbytes(20_000)
    for cut in (0, 1, 4095, 4096, 4097, 19_999):
        changed = long[:cut] + bytes([long[cut] ^ 1]) + long[cut + 1 :]
        assert range_id_module._common_prefix(long, changed) == _python_common_prefix(long, changed) == cut
