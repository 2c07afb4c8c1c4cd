"""The fuzzer's inputs: seed files (lakeFS's own range and metarange files, and files ``sstable_writer`` writes)
and the mutations made of them (bit flips, truncations, grown lengths, crafted varints, restart counts and block
handles, blocks repacked with a valid checksum). Input ``i`` of seed ``S`` is the same on every run."""

from __future__ import annotations

import hashlib
import random
import struct
from dataclasses import dataclass
from functools import cache

import cramjam

from lakefs_mirror_dagster.graveler.varint import decode_uvarint
from tests.graveler.fuzz_layout import Layout, Rebuild, block_body, decompressed, encode_handle, layout_of
from tests.graveler.sstable_writer import (
    WriterOptions,
    encode_range_data,
    fake_entry_records,
    uvarint,
    write_lakefs_file,
)


@dataclass(frozen=True)
class Seed:
    name: str
    data: bytes


def _metarange_records(n: int) -> list[tuple[bytes, bytes, bytes]]:
    rnd = random.Random(n)
    keys = sorted({b"tables/t%03d/part-%06d" % (rnd.randrange(50), rnd.randrange(10**6)) for _ in range(n)})
    out = []
    for i, key in enumerate(keys):
        range_hex = hashlib.sha256(key).hexdigest().encode()
        out.append((key, range_hex, encode_range_data(b"%d" % i, key, rnd.randrange(1, 1 << 30), rnd.randrange(1, 9))))
    return out


@cache
def seeds() -> tuple[Seed, ...]:
    """lakeFS's own range and metarange files, and files the writer makes: one- and two-level indexes, snappy and
    uncompressed blocks, a record alone, a metarange."""
    from tests.shared_fixtures import SSTABLE_FIXTURES

    found = [Seed(p.name, p.read_bytes()) for p in sorted(SSTABLE_FIXTURES.glob("*.sst"))]
    small = WriterOptions(block_size=512, index_block_size=256)
    made = {
        "one-record": write_lakefs_file(fake_entry_records(1)),
        "snappy-40": write_lakefs_file(fake_entry_records(40)),
        "plain-40": write_lakefs_file(fake_entry_records(40), options=WriterOptions(compress=False)),
        "two-level-snappy-120": write_lakefs_file(fake_entry_records(120), options=small),
        "two-level-plain-120": write_lakefs_file(
            fake_entry_records(120), options=WriterOptions(block_size=512, index_block_size=256, compress=False)
        ),
        "metarange-30": write_lakefs_file(_metarange_records(30), "metaranges"),
        "metarange-plain-60": write_lakefs_file(
            _metarange_records(60), "metaranges", options=WriterOptions(block_size=700, compress=False)
        ),
    }
    return (*found, *(Seed(name, f.data) for name, f in made.items()))


# ------------------------------------------------------------------------------------------------------ mutations
def _crafted_varint(rnd: random.Random, room: int) -> bytes:
    """A varint a writer never makes: at or past 64 bits, too long, unterminated, or just past the block."""
    choice = rnd.randrange(8)
    if choice == 0:
        return b"\xff" * 9 + b"\x01"  # 2**64 - 1
    if choice == 1:
        return b"\xff" * 9 + bytes([rnd.randrange(2, 128)])  # overflows 64 bits
    if choice == 2:
        return b"\x80" * rnd.randrange(10, 14) + b"\x00"  # too long
    if choice == 3:
        return b"\x80" * rnd.randrange(1, 12)  # unterminated
    if choice == 4:
        return uvarint(max(0, room + rnd.randrange(-2, 3)))  # around the end of the block
    if choice == 5:
        return uvarint(rnd.choice([1 << 31, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 32) - 1]))
    if choice == 6:
        return uvarint(rnd.randrange(8))  # a key shorter than its trailer
    return b"\x80" + b"\x00"  # 0, non-minimal


def _entry_starts(block: bytes) -> list[int]:
    """Where each entry of a valid block begins."""
    starts = []
    n = len(block)
    end = n - 4 - 4 * struct.unpack_from("<I", block, n - 4)[0]
    pos = 0
    for _ in range(n):
        if pos >= end:
            break
        starts.append(pos)
        _shared, pos = decode_uvarint(block, pos)
        unshared, pos = decode_uvarint(block, pos)
        vlen, pos = decode_uvarint(block, pos)
        pos += unshared + vlen
    return starts


def _mutate_block_content(rnd: random.Random, block: bytes) -> bytes:
    """A decompressed block damaged where its decoder looks: varints of an entry, the restart count, bytes."""
    out = bytearray(block)
    choice = rnd.randrange(7)
    if choice <= 1 and len(block) >= 8:
        starts = _entry_starts(block) or [0]
        at = rnd.choice(starts)
        skip = rnd.randrange(3)  # which of shared, unshared, value length
        pos = at
        for _ in range(skip):
            while pos < len(out) and out[pos] & 0x80:
                pos += 1
            pos += 1
        old_end = pos
        while old_end < len(out) and out[old_end] & 0x80:
            old_end += 1
        out[pos : old_end + 1] = _crafted_varint(rnd, len(block) - pos)
    elif choice == 2 and len(out) >= 4:
        n = len(out)
        count = struct.unpack_from("<I", out, n - 4)[0]
        new = rnd.choice([0, 1, count + 1, count - 1, (n - 4) // 4, (n - 4) // 4 + 1, 0xFFFFFFFF, 1 << 30])
        out[n - 4 :] = struct.pack("<I", new % (1 << 32))
    elif choice == 3 and out:
        del out[rnd.randrange(len(out)) :]
    elif choice == 4 and out:
        at = rnd.randrange(len(out))
        out[at:at] = rnd.randbytes(rnd.randrange(1, 20))
    elif choice == 5 and len(block) >= 8:
        starts = _entry_starts(block)
        if starts:  # a key's kind byte: not a SET
            at = rnd.choice(starts)
            out[at + rnd.randrange(min(40, len(out) - at))] = rnd.choice([0, 2, 7, 0x11, 0xFF])
    else:
        for _ in range(rnd.randrange(1, 6)):
            if out:
                out[rnd.randrange(len(out))] ^= 1 << rnd.randrange(8)
    return bytes(out)


def _mutate_snappy(rnd: random.Random, body: bytes) -> bytes:
    """A snappy stream damaged: its length preamble, a tag, a copy offset, bytes, or cut short."""
    out = bytearray(body)
    choice = rnd.randrange(5)
    if choice == 0:
        preamble_end = 0
        while preamble_end < len(out) and out[preamble_end] & 0x80:
            preamble_end += 1
        out[: preamble_end + 1] = rnd.choice([_crafted_varint(rnd, len(body)), uvarint(rnd.randrange(1 << 33))])
    elif choice == 1 and out:
        out[rnd.randrange(len(out))] = rnd.choice([0xF0, 0xF4, 0xF8, 0xFC, 0x01, 0x02, 0x03, 0xFF, 0xFE, 0xFD])
    elif choice == 2 and out:
        del out[rnd.randrange(len(out)) :]
    elif choice == 3:
        out += rnd.randbytes(rnd.randrange(1, 16))
    else:
        for _ in range(rnd.randrange(1, 4)):
            if out:
                out[rnd.randrange(len(out))] = rnd.randrange(256)
    return bytes(out)


def _crafted_handle(rnd: random.Random, layout: Layout, old: tuple[int, int]) -> bytes:
    """A block handle a writer never makes: past the data area, grown, shrunk, into another block, malformed."""
    end = layout.footer_start
    offset, length = old
    choice = rnd.randrange(10)
    if choice == 0:
        return encode_handle((offset, length + rnd.randrange(1, 64)))  # a grown length
    if choice == 1:
        return encode_handle((offset, max(0, length - rnd.randrange(1, 64))))
    if choice == 2:
        return encode_handle((offset + rnd.randrange(-8, 9) % max(1, end), length))
    if choice == 3:
        return encode_handle((rnd.randrange(end + 1), rnd.randrange(end + 1)))
    if choice == 4:
        return encode_handle((rnd.choice([end - 5, end - 4, end, end + 1, 1 << 40, (1 << 63) - 1]), rnd.randrange(8)))
    if choice == 5:
        return encode_handle((offset, rnd.choice([(1 << 64) - 1, 1 << 63, (1 << 63) - 1, 1 << 32, end])))
    if choice == 6:
        return uvarint(offset)  # no length
    if choice == 7:
        return _crafted_varint(rnd, end) + uvarint(length)
    if choice == 8:
        return encode_handle(old) + rnd.randbytes(rnd.randrange(1, 4))  # trailing bytes
    return encode_handle((offset, 0))


def make_input(seed: int, i: int) -> tuple[str, bytes, bool, bytes]:
    """Input ``i`` of ``seed``: (how it was made, file bytes, whether checksums are checked, the seed file)."""
    rnd = random.Random(f"{seed}:{i}")
    base = rnd.choice(seeds())
    data = base.data
    layout = layout_of(data)
    verify = rnd.random() < 0.4
    strategy = rnd.choice(
        ["bitflip", "bytes", "truncate", "truncate-keep-footer", "grow", "block-content", "snappy", "handles",
         "handles", "block-content", "block-content", "snappy"]
    )  # fmt: skip
    out = bytearray(data)
    if strategy == "bitflip":
        for _ in range(rnd.randrange(1, 9)):
            out[rnd.randrange(len(out))] ^= 1 << rnd.randrange(8)
    elif strategy == "bytes":
        for _ in range(rnd.randrange(1, 5)):
            out[rnd.randrange(len(out))] = rnd.randrange(256)
    elif strategy == "truncate":
        del out[rnd.randrange(len(out)) :]
    elif strategy == "truncate-keep-footer":
        cut = rnd.randrange(layout.footer_start)
        out = out[:cut] + out[layout.footer_start :]
    elif strategy == "grow":
        at = rnd.randrange(layout.footer_start + 1)
        out[at:at] = rnd.randbytes(rnd.randrange(1, 40))
    elif strategy in ("block-content", "snappy"):
        j = rnd.randrange(len(layout.data_handles))
        handle = layout.data_handles[j]
        body, kind = block_body(data, handle)
        if strategy == "snappy" or (kind == 1 and rnd.random() < 0.3):
            new_body, new_kind = _mutate_snappy(rnd, body if kind == 1 else bytes(cramjam.snappy.compress_raw(body))), 1
        else:
            content = _mutate_block_content(rnd, decompressed(data, handle))
            compress = rnd.random() < 0.5
            new_body, new_kind = (bytes(cramjam.snappy.compress_raw(content)), 1) if compress else (content, 0)
        rebuild = Rebuild(layout)
        new = rebuild.append(new_body, new_kind, good_crc=rnd.random() < 0.9)
        out = bytearray(rebuild.repoint_data({j: encode_handle(new)}))
    else:  # handles
        rebuild = Rebuild(layout)
        picks = {rnd.randrange(len(layout.data_handles)) for _ in range(rnd.randrange(1, 3))}
        values = {j: _crafted_handle(rnd, layout, layout.data_handles[j]) for j in picks}
        out = bytearray(rebuild.repoint_data(values))
    return f"{base.name}/{strategy}", bytes(out), verify, data
