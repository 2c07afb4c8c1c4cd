"""Fuzzing the C range-file reader (``graveler/_native.c``) against the Python loops it speeds up.

A range file comes from another installation's store, so a malformed one must give a clear error, never a crash,
an out-of-bounds read or a hang. This harness builds the extension with AddressSanitizer and
UndefinedBehaviorSanitizer into a cache directory, and runs it in a child process (``LD_PRELOAD`` of libasan,
``PYTHONMALLOC=malloc`` so every Python buffer sits in ASan's heap). The child feeds both implementations the same
mutated range and metarange files (bit flips, truncations, grown lengths, crafted varints, restart counts and block
handles, blocks repacked with a valid checksum so the damage reaches the decoders) from lakeFS's own files and from
files ``sstable_writer`` writes, and compares, step by step (index blocks, data blocks, records, range-ID hash input,
unchanged records against the original), the C result with the Python one: the same value, or a refusal at the
same step. A sanitizer report or a crash ends the child: the parent records the input, saves it, and goes on after
it. An input that takes longer than ``--hang-seconds`` is a hang.

    python -m tests.graveler.fuzz_native --inputs 200000 --seed 1

Input ``i`` of seed ``S`` is the same on every run (``--replay I`` runs one input and prints both outcomes).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import random
import selectors
import struct
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import cramjam

import lakefs_mirror_dagster.graveler as graveler
from lakefs_mirror_dagster.graveler import range_id, ranges, sstable
from lakefs_mirror_dagster.graveler.errors import GravelerError
from lakefs_mirror_dagster.graveler.sstable import FOOTER_SIZE, SSTable
from lakefs_mirror_dagster.graveler.varint import decode_uvarint
from tests.graveler.sstable_writer import (
    WriterOptions,
    _BlockBuilder,
    encode_range_data,
    fake_entry_records,
    masked_crc,
    uvarint,
    write_lakefs_file,
)

SOURCE = Path(graveler.__file__).with_name("_native.c")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakefs-mirror-dagster" / "fuzz-native"
FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]
#: What a sanitizer prints before it ends the process.
_SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer")

Outcome = tuple[Any, ...]


# ---------------------------------------------------------------------------------------------- the sanitized build
def build_sanitized(cache_dir: Path = CACHE) -> Path:
    """``_native.c`` compiled with ASan and UBSan, cached by the source's and the flags' hash."""
    py = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join([*FLAGS, py, suffix]).encode()).hexdigest()[:16]
    target = cache_dir / key / f"_native{suffix}"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    cmd = ["gcc", "-shared", "-fPIC", *FLAGS, f"-I{py}", str(SOURCE), "-o", str(partial)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"building the sanitized extension failed: {' '.join(cmd)}\n{done.stderr}")
    partial.replace(target)
    return target


def sanitizer_env() -> dict[str, str]:
    """The environment a Python built without sanitizers needs to load the sanitized extension."""
    libasan = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()
    if not os.path.isabs(libasan):
        raise RuntimeError("gcc does not know where libasan.so is: install the gcc package with its sanitizers")
    env = dict(os.environ)
    env.update(
        LD_PRELOAD=libasan,
        ASAN_OPTIONS="detect_leaks=0:exitcode=86:allocator_may_return_null=1:malloc_context_size=0:quarantine_size_mb=64",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87",
        PYTHONMALLOC="malloc",
        PYTHONFAULTHANDLER="1",
    )
    return env


def load_extension(path: Path) -> ModuleType:
    """The extension at ``path`` as a module of its own (the installed one stays as it is)."""
    loader = importlib.machinery.ExtensionFileLoader("lakefs_mirror_dagster.graveler._native", str(path))
    spec = importlib.util.spec_from_file_location(loader.name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


# -------------------------------------------------------------------------------------------------- the seed files
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


# ------------------------------------------------------------------------------------------ the file's structure
@dataclass
class _Layout:
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
def _layout(data: bytes) -> _Layout:
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
    return _Layout(data, len(data) - FOOTER_SIZE, sst.index_handle, two, tops if two else [], handles, owner)


def _block_body(data: bytes, handle: tuple[int, int]) -> tuple[bytes, int]:
    offset, length = handle
    return data[offset : offset + length], data[offset + length]


def _decompressed(data: bytes, handle: tuple[int, int]) -> bytes:
    body, kind = _block_body(data, handle)
    return bytes(cramjam.snappy.decompress_raw(body)) if kind == 1 else body


def _index_entries(block: bytes) -> list[tuple[bytes, bytes]]:
    return list(sstable.iter_block_entries(block, "index"))


def _index_block(entries: list[tuple[bytes, bytes]]) -> bytes:
    builder = _BlockBuilder(1)
    for key, value in entries:
        builder.add(key, value)
    return builder.finish()


class _Rebuild:
    """A file grown by appended blocks (before the footer), whose index is re-pointed at them: how a block is
    replaced by one of another length, its checksum valid, so the damage reaches the decoders."""

    def __init__(self, layout: _Layout) -> None:
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
        entries = _index_entries(_decompressed(self.layout.data, index_handle))
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
        tops = {p: _handle(self.replace_values(layout.partitions[p], vals)) for p, vals in by_part.items()}
        return self.finish(self.replace_values(layout.index, tops))

    def finish(self, index: tuple[int, int]) -> bytes:
        footer = bytearray(self.footer)
        meta, _ = _read_handle(footer, 1)
        packed = bytes(footer[:1]) + _handle(meta) + _handle(index)
        footer[: len(packed)] = packed
        footer[len(packed) : 41] = bytes(41 - len(packed))
        return bytes(self.head) + bytes(footer)


def _handle(h: tuple[int, int]) -> bytes:
    return uvarint(h[0]) + uvarint(h[1])


def _read_handle(buf: bytes | bytearray, pos: int) -> tuple[tuple[int, int], int]:
    offset, pos = decode_uvarint(bytes(buf), pos)
    length, pos = decode_uvarint(bytes(buf), pos)
    return (offset, length), pos


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


def _crafted_handle(rnd: random.Random, layout: _Layout, old: tuple[int, int]) -> bytes:
    """A block handle a writer never makes: past the data area, grown, shrunk, into another block, malformed."""
    end = layout.footer_start
    offset, length = old
    choice = rnd.randrange(10)
    if choice == 0:
        return _handle((offset, length + rnd.randrange(1, 64)))  # a grown length
    if choice == 1:
        return _handle((offset, max(0, length - rnd.randrange(1, 64))))
    if choice == 2:
        return _handle((offset + rnd.randrange(-8, 9) % max(1, end), length))
    if choice == 3:
        return _handle((rnd.randrange(end + 1), rnd.randrange(end + 1)))
    if choice == 4:
        return _handle((rnd.choice([end - 5, end - 4, end, end + 1, 1 << 40, (1 << 63) - 1]), rnd.randrange(8)))
    if choice == 5:
        return _handle((offset, rnd.choice([(1 << 64) - 1, 1 << 63, (1 << 63) - 1, 1 << 32, end])))
    if choice == 6:
        return uvarint(offset)  # no length
    if choice == 7:
        return _crafted_varint(rnd, end) + uvarint(length)
    if choice == 8:
        return _handle(old) + rnd.randbytes(rnd.randrange(1, 4))  # trailing bytes
    return _handle((offset, 0))


def make_input(seed: int, i: int) -> tuple[str, bytes, bool, bytes]:
    """Input ``i`` of ``seed``: (how it was made, file bytes, whether checksums are checked, the seed file)."""
    rnd = random.Random(f"{seed}:{i}")
    base = rnd.choice(seeds())
    data = base.data
    layout = _layout(data)
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
        body, kind = _block_body(data, handle)
        if strategy == "snappy" or (kind == 1 and rnd.random() < 0.3):
            new_body, new_kind = _mutate_snappy(rnd, body if kind == 1 else bytes(cramjam.snappy.compress_raw(body))), 1
        else:
            content = _mutate_block_content(rnd, _decompressed(data, handle))
            compress = rnd.random() < 0.5
            new_body, new_kind = (bytes(cramjam.snappy.compress_raw(content)), 1) if compress else (content, 0)
        rebuild = _Rebuild(layout)
        new = rebuild.append(new_body, new_kind, good_crc=rnd.random() < 0.9)
        out = bytearray(rebuild.repoint_data({j: _handle(new)}))
    else:  # handles
        rebuild = _Rebuild(layout)
        picks = {rnd.randrange(len(layout.data_handles)) for _ in range(rnd.randrange(1, 3))}
        values = {j: _crafted_handle(rnd, layout, layout.data_handles[j]) for j in picks}
        out = bytearray(rebuild.repoint_data(values))
    return f"{base.name}/{strategy}", bytes(out), verify, data


# ------------------------------------------------------------------------------------------ the two implementations
class _Impl:
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


def python_impl() -> _Impl:
    def read(sst: SSTable, handles: list[tuple[int, int]]) -> list[bytes]:
        return [sst.read_block(h, "data block", i) for i, h in enumerate(handles)]

    return _Impl(
        lambda block: sstable._python_index_block_handles(block, "index"),
        read,
        lambda block: list(sstable._data_block_records(block)),
        range_id._python_blocks_hash_input,
        ranges._python_changed_records,
        (GravelerError, IndexError),  # IndexError: the inline walk ran off the block (sstable._block_records)
    )


def c_impl(native: ModuleType) -> _Impl:
    def read(sst: SSTable, handles: list[tuple[int, int]]) -> list[bytes]:
        verify = sst.verify_checksums and sst.checksum_type == sstable.CHECKSUM_CRC32C
        return native.read_blocks(sst.raw, handles, sst._footer_start, verify, 0)  # type: ignore[no-any-return]

    return _Impl(
        native.index_block_handles,
        read,
        native.data_block_records,
        native.blocks_hash_input,
        native.changed_records,
        (ValueError,),
    )


def outcome(impl: _Impl, data: bytes, verify: bool, base_blocks: list[bytes]) -> Outcome:
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


# --------------------------------------------------------------------------------------------------------- child
def _child(path: Path, seed: int, start: int, stop: int) -> int:
    """Runs inputs ``start``..``stop``; prints ``> i`` before each, one JSON line per disagreement, a summary."""
    native = load_extension(path)
    kinds: Counter[str] = Counter()
    for i in range(start, stop):
        print(f"> {i}", flush=True)
        how, data, verify, base = make_input(seed, i)
        c, py = compare(native, data, verify, base)
        kinds[c[0] if c[0] != "refused" else f"refused:{c[1]}"] += 1
        if c != py or c[0] == "raised":
            differs = next((n for n, (a, b) in enumerate(zip(c, py, strict=False)) if a != b), len(c))
            print(json.dumps({"input": i, "how": how, "verify": verify, "differs_at": differs, "c": _short(c),
                              "python": _short(py)}))  # fmt: skip
    print("= " + json.dumps(dict(kinds)), flush=True)
    return 0


def _short(o: Outcome) -> list[str]:
    return [str(x)[:300] for x in o]


# -------------------------------------------------------------------------------------------------------- parent
@dataclass
class Report:
    inputs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    hangs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def findings(self) -> int:
        return len(self.disagreements) + len(self.crashes) + len(self.hangs)


def fuzz(
    inputs: int,
    seed: int,
    *,
    hang_seconds: float = 20.0,
    save_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Run ``inputs`` inputs of ``seed`` through the sanitized extension in child processes (a new one after each
    crash or hang, at most one per input); each finding's input is written to ``save_dir``."""
    path = build_sanitized()
    env = sanitizer_env()
    report = Report()
    start = 0
    root = Path(__file__).resolve().parents[2]
    for _ in range(inputs + 1):  # each child ends at the last input, or one input further on
        if start >= inputs:
            break
        cmd = [sys.executable, "-m", "tests.graveler.fuzz_native", "--child", str(path), "--seed", str(seed),
               "--start", str(start), "--inputs", str(inputs)]  # fmt: skip
        start = _run_child(cmd, env, root, start, inputs, hang_seconds, report, save_dir, seed, progress)
    report.inputs = inputs
    return report


def _run_child(
    cmd: list[str],
    env: dict[str, str],
    cwd: Path,
    start: int,
    stop: int,
    hang_seconds: float,
    report: Report,
    save_dir: Path | None,
    seed: int,
    progress: Callable[[str], None] | None,
) -> int:
    """One child: reads its lines until it ends; returns the input to go on from."""
    child = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(child.stdout, selectors.EVENT_READ)
    current, finished, last = start, False, time.monotonic()
    for _ in range(10 * (stop - start) + 10):
        if not sel.select(timeout=min(1.0, hang_seconds)):
            if time.monotonic() - last > hang_seconds:
                child.kill()
                child.wait(30)
                report.hangs.append(_finding(seed, current, "hang", save_dir))
                return current + 1
            if child.poll() is None:
                continue
        line = child.stdout.readline()
        if not line:
            break
        last = time.monotonic()
        if line.startswith("> "):
            current = int(line[2:])
            if progress is not None and current % 10_000 == 0 and current > start:
                progress(f"{current} inputs, {report.findings} findings")
        elif line.startswith("= "):
            report.outcomes.update(json.loads(line[2:]))
            finished = True
        elif line.startswith("{"):
            found = json.loads(line)
            report.disagreements.append(found)
            _save(save_dir, seed, found["input"], "disagreement")
    sel.close()
    err = child.stderr.read()
    code = child.wait(60)
    if finished and code == 0:
        return stop
    found = _finding(seed, current, f"exit {code}", save_dir)
    found["stderr"] = _sanitizer_lines(err)
    report.crashes.append(found)
    return current + 1


def _sanitizer_lines(err: str) -> str:
    lines = err.splitlines()
    marks = [n for n, line in enumerate(lines) if any(m in line for m in _SANITIZER_MARKS)]
    first = marks[0] if marks else max(0, len(lines) - 30)
    return "\n".join(lines[first : first + 30])


def _finding(seed: int, i: int, what: str, save_dir: Path | None) -> dict[str, Any]:
    how, _, verify, _ = make_input(seed, i)
    _save(save_dir, seed, i, what)
    return {"input": i, "how": how, "verify": verify, "what": what}


def _save(save_dir: Path | None, seed: int, i: int, what: str) -> None:
    if save_dir is None:
        return
    save_dir.mkdir(parents=True, exist_ok=True)
    _, data, verify, _ = make_input(seed, i)
    (save_dir / f"seed{seed}-input{i}-{what.replace(' ', '-')}-verify{int(verify)}.sst").write_bytes(data)


def _replay(seed: int, i: int) -> int:
    """One input in this process (run under the sanitizer's environment by ``--replay``)."""
    native = load_extension(build_sanitized())
    how, data, verify, base = make_input(seed, i)
    c, py = compare(native, data, verify, base)
    print(json.dumps({"input": i, "how": how, "verify": verify, "size": len(data), "c": _short(c),
                      "python": _short(py), "same": c == py}, indent=1))  # fmt: skip
    return 0 if c == py else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.graveler.fuzz_native", description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hang-seconds", type=float, default=20.0)
    parser.add_argument("--save", type=Path, default=None, help="where to write the inputs of findings")
    parser.add_argument("--replay", type=int, default=None, help="run input N alone under the sanitizers")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return _child(args.child, args.seed, args.start, args.inputs)
    if args.replay is not None:
        if "LD_PRELOAD" not in os.environ:
            os.execve(sys.executable, [sys.executable, "-m", "tests.graveler.fuzz_native", *sys.argv[1:]],
                      sanitizer_env())  # fmt: skip
        return _replay(args.seed, args.replay)
    started = time.monotonic()
    report = fuzz(args.inputs, args.seed, hang_seconds=args.hang_seconds, save_dir=args.save,
                  progress=lambda line: print(f"[fuzz] {line}", file=sys.stderr, flush=True))  # fmt: skip
    summary = {
        "inputs": report.inputs, "seed": args.seed, "seconds": round(time.monotonic() - started, 1),
        "outcomes": dict(report.outcomes), "disagreements": len(report.disagreements),
        "crashes": len(report.crashes), "hangs": len(report.hangs),
    }  # fmt: skip
    for found in [*report.crashes, *report.hangs, *report.disagreements][:20]:
        print(json.dumps(found, indent=1))
    print(json.dumps(summary))
    return 0 if report.findings == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
