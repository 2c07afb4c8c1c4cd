"""The two implementations of reading a range, C and Python, step by step, and their outcomes for one input:
the same value, or a refusal at the same step."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from lakefs_mirror_dagster.graveler import range_id, ranges, sstable
from lakefs_mirror_dagster.graveler.errors import GravelerError
from lakefs_mirror_dagster.graveler.sstable import SSTable

Outcome = tuple[Any, ...]


class Impl:
    """The steps of reading a range, by one implementation."""

    def __init__(
        self,
        index_handles: Callable[[bytes], list[tuple[int, int]]],
        read_blocks: Callable[[SSTable, list[tuple[int, int]]], list[bytes]],
        records: Callable[[bytes], list[tuple[bytes, bytes]]],
        hash_input: Callable[[list[bytes]], bytes],
        changed: Callable[[list[bytes], list[list[bytes]]], tuple[list[tuple[bytes, bytes]], int]],
        refusal: tuple[type[BaseException], ...],
    ) -> None:
        self.index_handles, self.read_blocks, self.records = index_handles, read_blocks, records
        self.hash_input, self.changed, self.refusal = hash_input, changed, refusal


def python_impl() -> Impl:
    def read(sst: SSTable, handles: list[tuple[int, int]]) -> list[bytes]:
        return [sst.read_block(h, "data block", i) for i, h in enumerate(handles)]

    return Impl(
        lambda block: sstable._python_index_block_handles(block, "index"),
        read,
        lambda block: list(sstable._data_block_records(block)),
        range_id._python_blocks_hash_input,
        ranges._python_changed_records,
        (GravelerError, IndexError),  # IndexError: the inline walk ran off the block (sstable._block_records)
    )


def c_impl(native: ModuleType) -> Impl:
    def read(sst: SSTable, handles: list[tuple[int, int]]) -> list[bytes]:
        verify = sst.verify_checksums and sst.checksum_type == sstable.CHECKSUM_CRC32C
        return native.read_blocks(sst.raw, handles, sst._footer_start, verify, 0)  # type: ignore[no-any-return]

    return Impl(
        native.index_block_handles,
        read,
        native.data_block_records,
        native.blocks_hash_input,
        native.changed_records,
        (ValueError,),
    )


def outcome(impl: Impl, data: bytes, verify: bool, base_blocks: list[bytes]) -> Outcome:
    """What reading ``data`` gives, step by step: ("ok", values...) or ("refused", step); an exception that is
    neither implementation's refusal is ("raised", step, its type)."""
    try:
        sst = SSTable.from_bytes(data, verify_checksums=verify)  # Python only: the C loops start at the index
    except GravelerError:
        return ("refused", "footer")
    step = "index"
    try:
        handles = impl.index_handles(sst.read_block(sst.index_handle, "index block"))
        if sst.index_type == sstable.INDEX_TYPE_TWO_LEVEL:
            handles = [h for part in handles for h in impl.index_handles(sst.read_block(part, "index partition"))]
        step = "blocks"
        blocks = impl.read_blocks(sst, handles)
        step = "records"
        records = [impl.records(b) for b in blocks]
        step = "hash"
        hashed = impl.hash_input(blocks)
        step = "changed"
        changed = impl.changed(blocks, [base_blocks]), impl.changed(base_blocks, [blocks])  # the damage on each side
        return ("ok", handles, blocks, records, hashed, changed)
    except impl.refusal:
        return ("refused", step)
    except Exception as exc:
        return ("raised", step, type(exc).__name__, str(exc)[:200])


def compare(native: ModuleType, data: bytes, verify: bool, base: bytes) -> tuple[Outcome, Outcome]:
    """The C outcome and the Python one for one input."""
    base_blocks = SSTable.from_bytes(base).data_blocks()
    return outcome(c_impl(native), data, verify, base_blocks), outcome(python_impl(), data, verify, base_blocks)
