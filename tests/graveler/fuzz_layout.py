"""Where a valid range file's blocks are, and the same file rebuilt with a block replaced by one of another length
(its checksum valid), so the fuzzer's damage reaches the decoders rather than the checksum check."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cache

import cramjam

from lakefs_mirror_dagster.graveler import sstable
from lakefs_mirror_dagster.graveler.sstable import FOOTER_SIZE, SSTable
from lakefs_mirror_dagster.graveler.varint import decode_uvarint
from tests.graveler.sstable_writer import _BlockBuilder, masked_crc, uvarint


@dataclass
class Layout:
    """Where a valid file's blocks are: each data block handle, and the index blocks that hold them."""

    data: bytes
    footer_start: int
    index: tuple[int, int]
    two_level: bool
    partitions: list[tuple[int, int]]
    data_handles: list[tuple[int, int]]
    #: partition number of each data block (0 when one level)
    owner: list[int] = field(default_factory=list)


@cache
def layout_of(data: bytes) -> Layout:
    sst = SSTable.from_bytes(data)
    top = sst.read_block(sst.index_handle)
    tops = sstable._python_index_block_handles(top, "index")
    two = sst.index_type == sstable.INDEX_TYPE_TWO_LEVEL
    handles: list[tuple[int, int]] = []
    owner: list[int] = []
    if two:
        for i, part in enumerate(tops):
            inner = sstable._python_index_block_handles(sst.read_block(part), "partition")
            handles += inner
            owner += [i] * len(inner)
    else:
        handles, owner = tops, [0] * len(tops)
    return Layout(data, len(data) - FOOTER_SIZE, sst.index_handle, two, tops if two else [], handles, owner)


def block_body(data: bytes, handle: tuple[int, int]) -> tuple[bytes, int]:
    offset, length = handle
    return data[offset : offset + length], data[offset + length]


def decompressed(data: bytes, handle: tuple[int, int]) -> bytes:
    body, kind = block_body(data, handle)
    return bytes(cramjam.snappy.decompress_raw(body)) if kind == 1 else body


def _index_entries(block: bytes) -> list[tuple[bytes, bytes]]:
    return list(sstable.iter_block_entries(block, "index"))


def _index_block(entries: list[tuple[bytes, bytes]]) -> bytes:
    builder = _BlockBuilder(1)
    for key, value in entries:
        builder.add(key, value)
    return builder.finish()


class Rebuild:
    """A file grown by appended blocks (before the footer), whose index is re-pointed at them: how a block is
    replaced by one of another length, its checksum valid, so the damage reaches the decoders."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.head = bytearray(layout.data[: layout.footer_start])
        self.footer = layout.data[layout.footer_start :]

    def append(self, body: bytes, kind: int, *, good_crc: bool = True) -> tuple[int, int]:
        offset = len(self.head)
        crc = masked_crc(body + bytes([kind])) if good_crc else 0
        self.head += body + bytes([kind]) + struct.pack("<I", crc)
        return offset, len(body)

    def replace_values(self, index_handle: tuple[int, int], values: dict[int, bytes]) -> tuple[int, int]:
        """A copy of the index block at ``index_handle`` with entry ``i``'s value replaced by ``values[i]``."""
        entries = _index_entries(decompressed(self.layout.data, index_handle))
        entries = [(k, values.get(i, v)) for i, (k, v) in enumerate(entries)]
        return self.append(_index_block(entries), 0)

    def repoint_data(self, values: dict[int, bytes]) -> bytes:
        """The file with data block handle ``i`` stored as ``values[i]`` (raw bytes of the index entry's value)."""
        layout = self.layout
        if not layout.two_level:
            return self.finish(self.replace_values(layout.index, values))
        by_part: dict[int, dict[int, bytes]] = {}
        for i, value in values.items():
            part = layout.owner[i]
            first = layout.owner.index(part)
            by_part.setdefault(part, {})[i - first] = value
        tops = {p: encode_handle(self.replace_values(layout.partitions[p], vals)) for p, vals in by_part.items()}
        return self.finish(self.replace_values(layout.index, tops))

    def finish(self, index: tuple[int, int]) -> bytes:
        footer = bytearray(self.footer)
        meta, _ = _read_handle(footer, 1)
        packed = bytes(footer[:1]) + encode_handle(meta) + encode_handle(index)
        footer[: len(packed)] = packed
        footer[len(packed) : 41] = bytes(41 - len(packed))
        return bytes(self.head) + bytes(footer)


def encode_handle(h: tuple[int, int]) -> bytes:
    return uvarint(h[0]) + uvarint(h[1])


def _read_handle(buf: bytes | bytearray, pos: int) -> tuple[tuple[int, int], int]:
    offset, pos = decode_uvarint(bytes(buf), pos)
    length, pos = decode_uvarint(bytes(buf), pos)
    return (offset, length), pos
