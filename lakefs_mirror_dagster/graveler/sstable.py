"""Read the sstables lakeFS writes for ranges and metaranges (pebble, TableFormatRocksDBv2).

Only what lakeFS's writer produces is supported: RocksDBv2 footer, CRC32C (or no) block checksums,
uncompressed or snappy blocks, single- or two-level index, one properties block. Everything else is
refused with an :class:`SSTableError` that names the problem, because a replicator must never copy or
trust a file it cannot fully read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import cramjam
import google_crc32c

from .errors import SSTableError, VarintError
from .varint import decode_uvarint

try:  # compiled by pip install where a C compiler is found (pyproject.toml, ext-modules); optional
    from ._native import data_block_records as _native_block_records
    from ._native import index_block_handles as _native_index_block_handles
    from ._native import read_blocks as _native_read_blocks
except ImportError:  # pragma: no cover - the Python walks below do the same, several times slower
    _native_block_records = None  # type: ignore[assignment]
    _native_index_block_handles = None  # type: ignore[assignment]
    _native_read_blocks = None  # type: ignore[assignment]

__all__ = [
    "FOOTER_SIZE",
    "ROCKSDB_MAGIC",
    "BlockHandle",
    "SSTable",
    "SSTableError",
    "block_list_records",
    "block_records",
    "iter_block_entries",
    "mask_crc",
]

FOOTER_SIZE = 53
BLOCK_TRAILER_SIZE = 5
ROCKSDB_MAGIC = bytes.fromhex("f7cff485b741e288")
_LEVELDB_MAGIC = bytes.fromhex("57fb808b247547db")
_PEBBLE_MAGIC = bytes.fromhex("f09faab3f09faab3")
_FOOTER_VERSION_OFFSET = 41

CHECKSUM_NONE = 0
CHECKSUM_CRC32C = 1
COMPRESSION_NONE = 0
COMPRESSION_SNAPPY = 1
_COMPRESSION_NAMES = {2: "zlib", 3: "bzip2", 4: "lz4", 5: "lz4hc", 6: "xpress", 7: "zstd"}

INDEX_TYPE_BINARY_SEARCH = 0
INDEX_TYPE_TWO_LEVEL = 2
PROPERTIES_KEY = b"rocksdb.properties"
INDEX_TYPE_PROPERTY = "rocksdb.block.based.table.index.type"
# The kind byte of the internal-key trailer (kind, then the sequence number): lakeFS writes every record with
# Writer.Set.
KIND_SET = 1

_U32 = struct.Struct("<I")
_CRC_MASK_DELTA = 0xA282EAD8

BlockHandle = tuple[int, int]
"""(offset, length without the 5-byte trailer)."""


def mask_crc(crc: int) -> int:
    """RocksDB/LevelDB checksum masking, so a CRC stored inside CRC'd data does not look like data."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _CRC_MASK_DELTA) & 0xFFFFFFFF


def _decode_handle(buf: bytes, pos: int, what: str) -> tuple[BlockHandle, int]:
    try:
        offset, pos = decode_uvarint(buf, pos)
        length, pos = decode_uvarint(buf, pos)
    except VarintError as exc:
        raise SSTableError(f"corrupt block handle in {what}: {exc}") from None
    return (offset, length), pos


def iter_block_entries(block: bytes, what: str = "block") -> Iterator[tuple[bytes, bytes]]:
    """Yield (key, value) of a block, undoing prefix compression; keys are returned as stored.

    Used for index, metaindex and properties blocks and as the reference implementation for data
    blocks (the hot paths in :mod:`.ranges` inline the same walk).
    """
    n = len(block)
    if n < 4:
        raise SSTableError(f"{what}: {n} bytes is too short to hold a restart count")
    num_restarts = _U32.unpack_from(block, n - 4)[0]
    end = n - 4 - 4 * num_restarts
    if num_restarts == 0 or end < 0:
        raise SSTableError(f"{what}: invalid restart count {num_restarts} for a {n}-byte block")
    pos = 0
    key = b""
    try:
        while pos < end:
            shared, pos = decode_uvarint(block, pos)
            unshared, pos = decode_uvarint(block, pos)
            vlen, pos = decode_uvarint(block, pos)
            kend = pos + unshared
            vend = kend + vlen
            if shared > len(key) or vend > end:
                raise SSTableError(
                    f"{what}: corrupt entry at offset {pos} (shared={shared}, unshared="
                    f"{unshared}, value length={vlen}, entries end at {end})"
                )
            key = key[:shared] + block[pos:kend]
            yield key, block[kend:vend]
            pos = vend
    except VarintError as exc:
        raise SSTableError(f"{what}: {exc}") from None


class SSTable:
    """An sstable held in memory; blocks are read, verified and decompressed on demand.

    ``verify_checksums=False`` skips CRC checks (only for callers that verify the content hash instead).
    """

    __slots__ = (
        "_data",
        "_footer_start",
        "_mv",
        "checksum_type",
        "format_version",
        "index_handle",
        "index_type",
        "metaindex_handle",
        "properties",
        "verify_checksums",
    )

    def __init__(self, data: bytes, *, verify_checksums: bool = True) -> None:
        if not isinstance(data, bytes):
            data = bytes(data)
        self._data = data
        self._mv = memoryview(data)
        self.verify_checksums = verify_checksums
        n = len(data)
        if n < FOOTER_SIZE:
            raise SSTableError(
                f"file is {n} bytes, shorter than the {FOOTER_SIZE}-byte sstable footer (truncated or empty)"
            )
        footer = data[n - FOOTER_SIZE :]
        magic = footer[-8:]
        if magic != ROCKSDB_MAGIC:
            if magic in (_LEVELDB_MAGIC, _PEBBLE_MAGIC):
                kind = "LevelDB" if magic == _LEVELDB_MAGIC else "Pebble"
                raise SSTableError(f"{kind}-format sstable; lakeFS ranges are RocksDBv2 format")
            raise SSTableError(
                f"bad magic {magic.hex()} at the end of the file (expected {ROCKSDB_MAGIC.hex()}): "
                "not an sstable, or the file is truncated"
            )
        self._footer_start = n - FOOTER_SIZE
        self.format_version = _U32.unpack_from(footer, _FOOTER_VERSION_OFFSET)[0]
        if self.format_version != 2:
            raise SSTableError(f"unsupported RocksDB table format version {self.format_version} (expected 2)")
        self.checksum_type = footer[0]
        if self.checksum_type not in (CHECKSUM_NONE, CHECKSUM_CRC32C):
            raise SSTableError(f"unsupported block checksum type {self.checksum_type} (only CRC32C is)")
        self.metaindex_handle, pos = _decode_handle(footer, 1, "footer")
        self.index_handle, pos = _decode_handle(footer, pos, "footer")
        if pos > _FOOTER_VERSION_OFFSET:
            raise SSTableError("corrupt footer: block handles overrun the padding")

        metaindex = self.read_block(self.metaindex_handle, "metaindex block")
        props_handle: BlockHandle | None = None
        for key, value in iter_block_entries(metaindex, "metaindex block"):
            if key == PROPERTIES_KEY:
                props_handle, _ = _decode_handle(value, 0, "metaindex block")
        if props_handle is None:
            raise SSTableError("metaindex block has no rocksdb.properties entry")
        props_block = self.read_block(props_handle, "properties block")
        self.properties: dict[str, bytes] = {
            k.decode("utf-8", "surrogateescape"): v for k, v in iter_block_entries(props_block, "properties block")
        }
        raw_index_type = self.properties.get(INDEX_TYPE_PROPERTY)
        if raw_index_type is None:
            self.index_type = INDEX_TYPE_BINARY_SEARCH
        elif len(raw_index_type) != 4:
            raise SSTableError(f"property {INDEX_TYPE_PROPERTY} is {len(raw_index_type)} bytes, expected 4")
        else:
            self.index_type = _U32.unpack(raw_index_type)[0]
        if self.index_type not in (INDEX_TYPE_BINARY_SEARCH, INDEX_TYPE_TWO_LEVEL):
            raise SSTableError(f"unsupported index type {self.index_type}")

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *, verify_checksums: bool = True) -> SSTable:
        return cls(bytes(data) if not isinstance(data, bytes) else data, verify_checksums=verify_checksums)

    @property
    def size(self) -> int:
        return len(self._data)

    @property
    def raw(self) -> bytes:
        """The file's bytes."""
        return self._data

    @property
    def user_properties(self) -> dict[str, str]:
        """Properties set by lakeFS (``type``, ``min_key``, ``max_key``, ``count``, ...), not by pebble."""
        return {
            k: v.decode("utf-8", "surrogateescape") for k, v in self.properties.items() if not k.startswith("rocksdb.")
        }

    @property
    def raw_user_properties(self) -> dict[bytes, bytes]:
        """User properties as stored, for hashing (keys and values may be arbitrary bytes)."""
        return {
            k.encode("utf-8", "surrogateescape"): v for k, v in self.properties.items() if not k.startswith("rocksdb.")
        }

    def property_uvarint(self, name: str) -> int | None:
        """A pebble counter property (stored as a uvarint), or None if absent."""
        raw = self.properties.get(name)
        if raw is None:
            return None
        try:
            value, end = decode_uvarint(raw, 0)
        except VarintError as exc:
            raise SSTableError(f"property {name}: {exc}") from None
        if end != len(raw):
            raise SSTableError(f"property {name}: {len(raw) - end} trailing bytes after its varint")
        return value

    def read_block(self, handle: BlockHandle, what: str = "block", index: int | None = None) -> bytes:
        """The block's contents: bounds-checked, checksum-verified and decompressed. Messages name the block
        ``what`` (``"<what> <index>"`` with an index, formatted only for a message)."""
        offset, length = handle
        end = offset + length
        if end + BLOCK_TRAILER_SIZE > self._footer_start:
            raise SSTableError(
                f"{_name(what, index)} at offset {offset} (+{length} bytes and trailer) extends past the data "
                f"area, which ends at {self._footer_start}: file truncated or corrupt"
            )
        data = self._data
        block_type = data[end]
        if self.verify_checksums and self.checksum_type == CHECKSUM_CRC32C:
            stored = _U32.unpack_from(data, end + 1)[0]
            # google_crc32c (Apache-2.0) takes bytes only, not a memoryview: the slice copies the block.
            computed = mask_crc(google_crc32c.value(data[offset : end + 1]))
            if stored != computed:
                raise SSTableError(
                    f"checksum mismatch in {_name(what, index)} at offset {offset} (length {length}): stored "
                    f"{stored:#010x}, computed {computed:#010x}; the file is corrupt"
                )
        if block_type == COMPRESSION_NONE:
            return data[offset:end]
        if block_type == COMPRESSION_SNAPPY:
            try:
                return bytes(cramjam.snappy.decompress_raw(self._mv[offset:end]))
            except Exception as exc:  # cramjam raises its own DecompressionError
                raise SSTableError(
                    f"{_name(what, index)} at offset {offset}: snappy decompression failed: {exc}"
                ) from None
        name = _COMPRESSION_NAMES.get(block_type, "unknown")
        raise SSTableError(
            f"{_name(what, index)} at offset {offset}: unsupported compression type {block_type} ({name})"
        )

    def data_block_handles(self) -> list[BlockHandle]:
        """Handles of all data blocks in key order, expanding a two-level index."""
        handles = _index_block_handles(self.read_block(self.index_handle, "index block"), "index block")
        if self.index_type != INDEX_TYPE_TWO_LEVEL:
            return handles
        out: list[BlockHandle] = []
        for i, part in enumerate(handles):
            out.extend(_index_block_handles(self.read_block(part, "index partition", i), f"index partition {i}"))
        return out

    def iter_data_blocks(self) -> Iterator[bytes]:
        """Decompressed, verified data blocks in key order."""
        for i, handle in enumerate(self.data_block_handles()):
            yield self.read_block(handle, "data block", i)

    def data_blocks(self) -> list[bytes]:
        """:meth:`iter_data_blocks` as a list: what :func:`block_list_records` and the range-ID hash walk."""
        return self.read_data_blocks(self.data_block_handles())

    def read_data_blocks(self, handles: list[BlockHandle], first: int = 0) -> list[bytes]:
        """The data blocks at ``handles`` (numbered from ``first`` in messages), each read as :meth:`read_block`
        reads it. The C loop (``_native.read_blocks``) checks and decompresses an 8 MB range's blocks in 12 ms,
        the Python one in 17."""
        if _native_read_blocks is None:
            return [self.read_block(h, "data block", first + i) for i, h in enumerate(handles)]
        verify = self.verify_checksums and self.checksum_type == CHECKSUM_CRC32C
        try:
            return _native_read_blocks(self._data, handles, self._footer_start, verify, first)
        except ValueError as exc:
            raise SSTableError(str(exc)) from None

    def iter_records(self) -> Iterator[tuple[bytes, bytes]]:
        """(user key, raw value) of every record, in key order; refuses anything but SET records."""
        for i, block in enumerate(self.iter_data_blocks()):
            yield from block_records(block, i)


def block_list_records(blocks: list[bytes]) -> list[tuple[bytes, bytes]]:
    """(user key, raw value) of every record of these data blocks (:meth:`SSTable.data_blocks`), in order."""
    out: list[tuple[bytes, bytes]] = []
    for i, block in enumerate(blocks):
        out.extend(block_records(block, i))
    return out


def _name(what: str, index: int | None) -> str:
    return what if index is None else f"{what} {index}"


def _python_index_block_handles(block: bytes, what: str) -> list[BlockHandle]:
    """The data block handles an index block holds; the reference for ``_native.index_block_handles``."""
    return [_decode_handle(v, 0, what)[0] for _, v in iter_block_entries(block, what)]


def _index_block_handles(block: bytes, what: str) -> list[BlockHandle]:
    if _native_index_block_handles is None:
        return _python_index_block_handles(block, what)
    try:
        return _native_index_block_handles(block)
    except ValueError as exc:
        raise SSTableError(f"{what}: {exc}") from None


def block_records(block: bytes, index: int) -> list[tuple[bytes, bytes]]:
    """The records of data block number ``index``, by the C walk if it was built, else the Python one."""
    try:
        if _native_block_records is not None:
            return _native_block_records(block)
        return list(_data_block_records(block))
    except (IndexError, VarintError) as exc:  # the Python walk ran off the block
        raise SSTableError(f"data block {index}: corrupt entry ({exc})") from None
    except ValueError as exc:  # SSTableError from the Python walk, ValueError from the C one: what is wrong
        raise SSTableError(f"data block {index}: {exc}") from None


def _data_block_records(block: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Like :func:`iter_block_entries` for data blocks, with inline short varints and the trailer stripped; its
    messages leave naming the block to the caller (``block_records``).

    The reference for ``_native.data_block_records`` (``_native.c``), which must agree with it on every block,
    valid or not (``tests/graveler/test_graveler_native.py``)."""
    n = len(block)
    if n < 8:
        raise SSTableError(f"{n} bytes is too short")
    end = n - 4 - 4 * _U32.unpack_from(block, n - 4)[0]
    if end < 0:
        raise SSTableError("restart count exceeds the block")
    pos = 0
    ukey = b""
    # Where the previous key's 8-byte trailer is: its offset in the block, or the bytes (for a key rebuilt
    # through the slow path); neither before the first key, which has nothing to share.
    trailer_at = -1
    trailer = b""
    while pos < end:
        shared = block[pos]
        if shared < 0x80:
            pos += 1
        else:
            shared, pos = decode_uvarint(block, pos)
        unshared = block[pos]
        if unshared < 0x80:
            pos += 1
        else:
            unshared, pos = decode_uvarint(block, pos)
        vlen = block[pos]
        if vlen < 0x80:
            pos += 1
        elif block[pos + 1] < 0x80:
            vlen = (vlen & 0x7F) | (block[pos + 1] << 7)
            pos += 2
        else:
            vlen, pos = decode_uvarint(block, pos)
        kend = pos + unshared
        vend = kend + vlen
        if vend > end:
            raise SSTableError(f"entry at offset {pos} overruns the block")
        if shared <= len(ukey) and unshared >= 8:
            ukey = ukey[:shared] + block[pos : kend - 8] if shared else block[pos : kend - 8]
            trailer_at = kend - 8
            kind = block[trailer_at]
        else:  # the shared prefix reaches into the previous key's trailer (or the entry is corrupt)
            if trailer_at >= 0:
                trailer = block[trailer_at : trailer_at + 8]
                trailer_at = -1
            prev = ukey + trailer
            if shared > len(prev) or shared + unshared < 8:
                raise SSTableError(f"corrupt key at offset {pos}")
            ikey = prev[:shared] + block[pos:kend]
            ukey, kind, trailer = ikey[:-8], ikey[-8], ikey[-8:]
        if kind != KIND_SET:
            raise SSTableError(f"record {ukey!r} has key kind {kind} (lakeFS writes only SET records)")
        yield ukey, block[kend:vend]
        pos = vend
