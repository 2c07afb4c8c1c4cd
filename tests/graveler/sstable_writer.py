"""A small sstable writer laying files out like lakeFS's (pebble, RocksDBv2), for tests and benchmarks.

Written from the format description (docs §3), independently of the reader, so the reader is tested
against bytes it did not produce itself. Mimics pebble where layout matters: restart interval 16 for
data blocks and 1 for index blocks, ~4 KiB blocks flushed at 90 %, snappy only if it saves 12.5 %,
shortened index separators, two-level index once one index block would exceed its size, uncompressed
properties (one restart) and metaindex blocks, masked CRC32C trailers, 53-byte footer.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import cramjam
import google_crc32c

SET_TRAILER = b"\x01" + b"\x00" * 7
SEPARATOR_TRAILER = b"\x11" + b"\xff" * 7
MAGIC = bytes.fromhex("f7cff485b741e288")


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def svarint(v: int) -> bytes:
    return uvarint(v << 1 if v >= 0 else ((-v) << 1) - 1)


def lakefs_value(identity: bytes, data: bytes) -> bytes:
    return svarint(len(identity)) + identity + svarint(len(data)) + data


def masked_crc(data: bytes) -> int:
    c = google_crc32c.value(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _pb_len(field_no: int, payload: bytes) -> bytes:
    return uvarint(field_no << 3 | 2) + uvarint(len(payload)) + payload


def _pb_varint(field_no: int, v: int) -> bytes:
    return uvarint(field_no << 3) + uvarint(v % (1 << 64))


def encode_entry(
    address: str,
    size: int,
    *,
    e_tag: str = "",
    last_modified: tuple[int, int] = (0, 0),
    metadata: Mapping[str, str] | None = None,
    address_type: int = 0,
    content_type: str = "",
) -> bytes:
    """catalog.Entry in Go's field order, proto3 defaults omitted."""
    out = bytearray()
    if address:
        out += _pb_len(1, address.encode())
    secs, nanos = last_modified
    ts = (_pb_varint(1, secs) if secs else b"") + (_pb_varint(2, nanos) if nanos else b"")
    if last_modified != (0, 0) or ts:
        out += _pb_len(2, ts)
    if size:
        out += _pb_varint(3, size)
    if e_tag:
        out += _pb_len(4, e_tag.encode())
    for k in sorted(metadata or {}):
        out += _pb_len(5, _pb_len(1, k.encode()) + _pb_len(2, (metadata or {})[k].encode()))
    if address_type:
        out += _pb_varint(6, address_type)
    if content_type:
        out += _pb_len(7, content_type.encode())
    return bytes(out)


def encode_range_data(min_key: bytes, max_key: bytes, estimated_size: int, count: int) -> bytes:
    out = bytearray()
    if min_key:
        out += _pb_len(1, min_key)
    if max_key:
        out += _pb_len(2, max_key)
    if estimated_size:
        out += _pb_varint(3, estimated_size)
    if count:
        out += _pb_varint(4, count)
    return bytes(out)


class _BlockBuilder:
    def __init__(self, restart_interval: int) -> None:
        self.restart_interval = restart_interval
        self.buf = bytearray()
        self.restarts: list[int] = []
        self.last_key = b""
        self.count = 0

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count % self.restart_interval == 0:
            self.restarts.append(len(self.buf))
        else:
            m = min(len(key), len(self.last_key))
            while shared < m and key[shared] == self.last_key[shared]:
                shared += 1
        self.buf += uvarint(shared) + uvarint(len(key) - shared) + uvarint(len(value))
        self.buf += key[shared:] + value
        self.last_key = key
        self.count += 1

    def estimated_size(self) -> int:
        return len(self.buf) + 4 * (len(self.restarts) + 1)

    def finish(self) -> bytes:
        restarts = self.restarts or [0]
        return bytes(self.buf) + b"".join(struct.pack("<I", r) for r in restarts) + struct.pack("<I", len(restarts))

    def reset(self) -> None:
        self.__init__(self.restart_interval)  # type: ignore[misc]


def _separator(a: bytes, b: bytes) -> bytes:
    """Shortest user key k with a <= k < b (pebble's bytewise Separator)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    if i >= n or a[i] >= b[i]:
        return a
    if a[i] + 1 < b[i]:
        return a[:i] + bytes([a[i] + 1])
    for j in range(i + 1, len(a)):
        if a[j] != 0xFF:
            return a[:j] + bytes([a[j] + 1])
    return a


def _successor(a: bytes) -> bytes:
    for j, c in enumerate(a):
        if c != 0xFF:
            return a[:j] + bytes([c + 1])
    return a


def _index_key(last_user_key: bytes, next_user_key: bytes | None) -> bytes:
    sep = _successor(last_user_key) if next_user_key is None else _separator(last_user_key, next_user_key)
    if len(sep) <= len(last_user_key) and sep > last_user_key:
        return sep + SEPARATOR_TRAILER
    return last_user_key + SET_TRAILER


@dataclass
class WriterOptions:
    block_size: int = 4096
    index_block_size: int = 4096
    compress: bool = True
    checksum: bool = True


@dataclass
class _State:
    out: bytearray = field(default_factory=bytearray)

    def write_block(self, block: bytes, compress: bool) -> tuple[int, int]:
        btype = 0
        body = block
        if compress:
            c = bytes(cramjam.snappy.compress_raw(block))
            if len(c) < len(block) - len(block) // 8:
                body, btype = c, 1
        off = len(self.out)
        self.out += body
        trailer_type = bytes([btype])
        self.out += trailer_type + struct.pack("<I", masked_crc(body + trailer_type))
        return off, len(body)


def _should_flush(block: _BlockBuilder, key_len: int, value_len: int, target: int) -> bool:
    """Pebble's rule: flush at the target size, or above 90 % if the next entry would cross it."""
    if block.count == 0:
        return False
    size = block.estimated_size()
    if size >= target:
        return True
    if size <= (target * 90 + 99) // 100:
        return False
    new_size = size + key_len + value_len + 4 + len(uvarint(key_len)) + len(uvarint(value_len))
    if block.count % block.restart_interval == 0:
        new_size += 4
    return new_size > target


def _handle(h: tuple[int, int]) -> bytes:
    return uvarint(h[0]) + uvarint(h[1])


def write_sstable(
    records: Iterable[tuple[bytes, bytes]],
    user_properties: Mapping[str, bytes],
    options: WriterOptions | None = None,
) -> bytes:
    """Write sorted (user key, value) records as SET records plus the given user properties."""
    opts = options or WriterOptions()
    st = _State()
    data = _BlockBuilder(16)
    index_entries: list[tuple[bytes, bytes]] = []  # (separator internal key, data block handle)
    pending_last: bytes | None = None
    pending_handle: tuple[int, int] | None = None
    num_entries = raw_key = raw_value = 0
    prev: bytes | None = None

    def flush_pending(next_key: bytes | None) -> None:
        nonlocal pending_last, pending_handle
        if pending_last is not None and pending_handle is not None:
            index_entries.append((_index_key(pending_last, next_key), _handle(pending_handle)))
        pending_last = pending_handle = None

    for key, value in records:
        if prev is not None and key <= prev:
            raise ValueError(f"keys must be strictly increasing: {key!r} after {prev!r}")
        ikey = key + SET_TRAILER
        if _should_flush(data, len(ikey), len(value), opts.block_size):
            pending_handle = st.write_block(data.finish(), opts.compress)
            pending_last = prev
            data.reset()
            flush_pending(key)
        data.add(ikey, value)
        prev = key
        num_entries += 1
        raw_key += len(ikey)
        raw_value += len(value)
    if data.count:
        pending_handle = st.write_block(data.finish(), opts.compress)
        pending_last = prev
    flush_pending(None)
    num_data_blocks = len(index_entries)
    data_size = len(st.out)

    # Index: one block, or partitions plus a top-level block once one block would be too large.
    partitions: list[list[tuple[bytes, bytes]]] = [[]]
    part_size = 0
    for k, v in index_entries:
        sz = len(k) + len(v) + 3 + 4
        if partitions[-1] and part_size + sz > opts.index_block_size:
            partitions.append([])
            part_size = 0
        partitions[-1].append((k, v))
        part_size += sz
    two_level = len(partitions) > 1
    if two_level:
        top = _BlockBuilder(1)
        for part in partitions:
            b = _BlockBuilder(1)
            for k, v in part:
                b.add(k, v)
            h = st.write_block(b.finish(), opts.compress)
            top.add(part[-1][0], _handle(h))
        index_handle = st.write_block(top.finish(), opts.compress)
    else:
        b = _BlockBuilder(1)
        for k, v in index_entries:
            b.add(k, v)
        index_handle = st.write_block(b.finish(), opts.compress)
    index_size = len(st.out) - data_size

    props: dict[bytes, bytes] = {
        b"rocksdb.block.based.table.index.type": struct.pack("<I", 2 if two_level else 0),
        b"rocksdb.block.based.table.prefix.filtering": b"0",
        b"rocksdb.block.based.table.whole.key.filtering": b"0",
        b"rocksdb.column.family.id": uvarint(0x7FFFFFFF),
        b"rocksdb.compression_options": (
            b"window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; zstd_max_train_bytes=0; enabled=0; "
        ),
        b"rocksdb.external_sst_file.global_seqno": b"\x00" * 8,
        b"rocksdb.external_sst_file.version": struct.pack("<I", 2),
        b"rocksdb.fixed.key.length": uvarint(0),
        b"rocksdb.index.key.is.user.key": uvarint(0),
        b"rocksdb.index.value.is.delta.encoded": uvarint(0),
        b"rocksdb.merge.operands": uvarint(0),
        b"rocksdb.num.range-deletions": uvarint(0),
        b"rocksdb.oldest.key.time": uvarint(0),
        b"rocksdb.prefix.extractor.name": b"nullptr",
        b"rocksdb.comparator": b"leveldb.BytewiseComparator",
        b"rocksdb.compression": b"Snappy",
        b"rocksdb.creation.time": uvarint(0),
        b"rocksdb.data.size": uvarint(data_size),
        b"rocksdb.deleted.keys": uvarint(0),
        b"rocksdb.filter.size": uvarint(0),
        b"rocksdb.format.version": uvarint(0),
        b"rocksdb.index.size": uvarint(index_size),
        b"rocksdb.merge.operator": b"pebble.concatenate",
        b"rocksdb.num.data.blocks": uvarint(num_data_blocks),
        b"rocksdb.num.entries": uvarint(num_entries),
        b"rocksdb.property.collectors": b"[static]",
        b"rocksdb.raw.key.size": uvarint(raw_key),
        b"rocksdb.raw.value.size": uvarint(raw_value),
    }
    if two_level:
        props[b"rocksdb.index.partitions"] = uvarint(len(partitions))
    for name, raw in user_properties.items():
        props[name.encode()] = raw
    pb = _BlockBuilder(1 << 31)
    for k in sorted(props):
        pb.add(k, props[k])
    props_handle = st.write_block(pb.finish(), False)
    mb = _BlockBuilder(1)
    mb.add(b"rocksdb.properties", _handle(props_handle))
    metaindex_handle = st.write_block(mb.finish(), False)

    footer = bytearray(b"\x01" + _handle(metaindex_handle) + _handle(index_handle))
    footer += b"\x00" * (41 - len(footer))
    footer += struct.pack("<I", 2) + MAGIC
    st.out += footer
    return bytes(st.out)


@dataclass
class LakeFSFile:
    data: bytes
    range_id: str
    count: int
    min_key: bytes
    max_key: bytes


def write_lakefs_file(
    records: Iterable[tuple[bytes, bytes, bytes]],
    file_type: str = "ranges",
    metadata: Mapping[str, str] | None = None,
    options: WriterOptions | None = None,
) -> LakeFSFile:
    """What lakeFS's DiskWriter does: (key, identity, data) records, content hash as the ID, user props."""
    h = hashlib.sha256()
    values: list[tuple[bytes, bytes]] = []
    for key, identity, data in records:
        value = lakefs_value(identity, data)
        h.update(str(len(key)).encode() + key + b"|" + str(len(value)).encode() + value + b"|")
        values.append((key, value))
    meta = {"type": file_type, **(metadata or {})}

    def i64(v: int) -> bytes:
        return b"\x02\x08" + v.to_bytes(8, "big")

    h.update(b"\x04" + i64(len(meta)))
    for k in sorted(meta, key=str.encode):
        for s in (k.encode(), meta[k].encode()):
            h.update(b"\x01" + i64(len(s)) + s)
    min_key = values[0][0] if values else b""
    max_key = values[-1][0] if values else b""
    props = {k: v.encode() for k, v in meta.items()}
    props.update(
        {
            "min_key": min_key,
            "max_key": max_key,
            "count": str(len(values)).encode(),
            "estimated_size_bytes": str(sum(len(k) + len(v) for k, v in values)).encode(),
        }
    )
    data = write_sstable(values, props, options)
    return LakeFSFile(data, h.hexdigest(), len(values), min_key, max_key)


def fake_entry_records(n: int, *, seed: int = 7) -> list[tuple[bytes, bytes, bytes]]:
    """Realistic object records: nested paths, xid-like relative addresses, S3-like etags and sizes.

    Identities are random 32-byte strings: tests that need real identities compute them themselves.
    """
    import random

    rnd = random.Random(seed)
    out = []
    for i in range(n):
        key = f"tables/events/date=2024-{1 + i // 40000 % 12:02d}-{1 + i // 2000 % 28:02d}/part-{i:07d}.parquet"
        address = f"data/g{rnd.getrandbits(60):015x}/{rnd.getrandbits(80):020x}"
        full = i % 50 == 0
        if full:
            address = f"s3://imported-bucket/raw/{i:07d}.bin"
        meta = {"user": "etl"} if i % 10 == 0 else None
        data = encode_entry(
            address,
            rnd.randint(100, 1 << 34),
            e_tag=f"{rnd.getrandbits(128):032x}",
            last_modified=(1_700_000_000 + i, rnd.randint(0, 999_999_999)),
            metadata=meta,
            address_type=2 if full else 1,
            content_type="application/octet-stream",
        )
        out.append((key.encode(), rnd.randbytes(32), data))
    out.sort()
    return out
