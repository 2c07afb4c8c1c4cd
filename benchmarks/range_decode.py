"""Decode speed of lakeFS range files: full decoder, fast location path, and a naive baseline.

Generates a realistic range (~100,000 entries, snappy blocks, two-level index) with the test writer,
then reports entries/s (best of N runs, single core, CRC verified unless --no-verify). Then the work of a
pass on a range lakeFS rewrote to insert one key: both files hashed, records compared, one decoded; through
the C loops (graveler/_native.c) and through their Python references, in the same run.

    .venv/bin/python benchmarks/range_decode.py [--entries 100000] [--repeat 5] [--no-verify]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lakefs_mirror_dagster.graveler import (
    SSTable,
    changed_entries,
    compute_range_id,
    iter_entries,
    iter_entry_locations,
    object_blocks,
    object_range,
    range_id,
    ranges,
    sstable,
)
from lakefs_mirror_dagster.graveler.protowire import iter_fields
from lakefs_mirror_dagster.graveler.sstable import iter_block_entries
from lakefs_mirror_dagster.graveler.varint import decode_varint
from tests.graveler.sstable_writer import fake_entry_records, write_lakefs_file


def naive_locations(sst: SSTable) -> Iterator[tuple[bytes, str, int, int]]:
    """The straightforward decoder: generic block walk, generic varints, generic protobuf field loop."""
    for block in sst.iter_data_blocks():
        for ikey, value in iter_block_entries(block):
            id_len, p = decode_varint(value, 0)
            data_len, p = decode_varint(value, p + id_len)
            address, size, address_type = "", 0, 0
            for num, _wire, v in iter_fields(value[p : p + data_len], "entry"):
                if num == 1:
                    address = bytes(v).decode()
                elif num == 3:
                    size = int(v)
                elif num == 6:
                    address_type = int(v)
            yield ikey[:-8], address, address_type, size


def best_rate(data: bytes, verify: bool, fn: Callable[[SSTable], Iterator[object]], repeat: int) -> tuple[float, int]:
    best = 0.0
    n = 0
    for _ in range(repeat):
        start = time.perf_counter()
        sst = SSTable.from_bytes(data, verify_checksums=verify)
        counter = collections.Counter(1 for _ in fn(sst))
        elapsed = time.perf_counter() - start
        n = counter[1]
        best = max(best, n / elapsed)
    return best, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-verify", action="store_true", help="skip block CRC checks")
    args = parser.parse_args()
    verify = not args.no_verify

    t0 = time.perf_counter()
    lf = write_lakefs_file(fake_entry_records(args.entries))
    sst = SSTable.from_bytes(lf.data)
    print(
        f"generated {lf.count:,} entries in {time.perf_counter() - t0:.1f}s: {len(lf.data) / 1e6:.1f} MB, "
        f"{len(sst.data_block_handles())} data blocks, index type {sst.index_type} "
        f"({sst.property_uvarint('rocksdb.index.partitions') or 1} index partitions), CRC verify={verify}"
    )
    assert sst.index_type == 2, "expected a two-level index"

    baseline, n0 = best_rate(lf.data, verify, naive_locations, args.repeat)
    fast, n1 = best_rate(lf.data, verify, iter_entry_locations, args.repeat)
    full, n2 = best_rate(lf.data, verify, iter_entries, args.repeat)
    assert n0 == n1 == n2 == lf.count
    print(f"naive baseline (key, address, type, size): {baseline:>10,.0f} entries/s")
    print(f"fast path  iter_entry_locations():         {fast:>10,.0f} entries/s  ({fast / baseline:.1f}x baseline)")
    print(f"full       iter_entries() -> Entry:        {full:>10,.0f} entries/s  ({full / baseline:.1f}x baseline)")

    start = time.perf_counter()
    rid = compute_range_id(SSTable.from_bytes(lf.data, verify_checksums=verify))
    elapsed = time.perf_counter() - start
    assert rid == lf.range_id
    print(f"range ID recomputation:                    {lf.count / elapsed:>10,.0f} entries/s")

    # A key inserted between keys: lakeFS rewrites the range; a pass hashes it and its base, then compares them.
    records = fake_entry_records(args.entries + 1)
    base = write_lakefs_file(records[: len(records) // 2] + records[len(records) // 2 + 1 :])
    new = write_lakefs_file(records)

    def rewrite_pass() -> int:
        changed, unchanged = changed_entries(
            object_blocks(new.data, new.range_id), [object_blocks(base.data, base.range_id)]
        )
        assert len(changed) == 1 and unchanged == args.entries
        return unchanged

    # The sync loop's case: the base was verified by the pass that wrote it and is still in memory; the rewrite
    # is checked against it, so the blocks before the inserted key are neither decompressed nor hashed again.
    verified_base = object_range(base.data, base.range_id)

    def rewrite_against_remembered_base() -> int:
        rewrite = object_range(new.data, new.range_id, like=verified_base)
        changed, unchanged = changed_entries(rewrite.blocks, [verified_base.blocks])
        assert len(changed) == 1 and unchanged == args.entries
        return unchanged

    with_c = best_seconds(rewrite_pass, args.repeat) if c_loops_built() else None
    with_base = best_seconds(rewrite_against_remembered_base, args.repeat) if c_loops_built() else None
    with python_loops():
        with_python = best_seconds(rewrite_pass, args.repeat)
    print(f"rewritten range vs its base (hash both, compare), {args.entries:,} entries, key inserted in the middle:")
    print(f"  Python loops:                            {with_python * 1000:>10.1f} ms")
    if with_c is None or with_base is None:
        print("  C loops:                                 not built (graveler/_native.c needs gcc at install)")
    else:
        faster = with_python / with_c
        print(f"  C loops (graveler/_native.c):            {with_c * 1000:>10.1f} ms  ({faster:.1f}x faster)")
        print(
            f"  C loops, base remembered from its pass:  {with_base * 1000:>10.1f} ms  "
            f"({with_python / with_base:.1f}x faster; the half before the key taken from the base)"
        )


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


_C_LOOPS = (
    (sstable, "_native_block_records"),
    (sstable, "_native_index_block_handles"),
    (range_id, "_native_blocks_hash_input"),
    (ranges, "_native_changed_records"),
    (sstable, "_native_read_blocks"),
    (range_id, "_native_common_prefix"),
)


def c_loops_built() -> bool:
    return all(getattr(module, name) is not None for module, name in _C_LOOPS)


@contextlib.contextmanager
def python_loops() -> Iterator[None]:
    """The Python references of the C loops, for a baseline in the same run."""
    saved = [getattr(module, name) for module, name in _C_LOOPS]
    for module, name in _C_LOOPS:
        setattr(module, name, None)
    try:
        yield
    finally:
        for (module, name), value in zip(_C_LOOPS, saved, strict=True):
            setattr(module, name, value)


if __name__ == "__main__":
    main()
