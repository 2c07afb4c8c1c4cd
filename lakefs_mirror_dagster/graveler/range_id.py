"""Recompute the content-hash ID of a range or metarange file (``pkg/graveler/sstable/writer.go``).

The ID is not a hash of the file bytes: it hashes every record and the user properties the writer was
given. A downloaded ``_lakefs/<id>`` file can therefore be checked end to end before it is copied to a
destination, where lakeFS would trust it blindly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from .errors import RangeIdMismatchError
from .ident import IdentityWriter
from .sstable import SSTable

__all__ = [
    "WRITER_ADDED_PROPERTIES",
    "RangeIdMismatchError",
    "compute_range_id",
    "range_id_of_bytes",
    "verified_records",
    "verify_range_file",
]

# Added by lakeFS's writer at Close, after the metadata that goes into the ID was hashed.
WRITER_ADDED_PROPERTIES = frozenset({b"min_key", b"max_key", b"count", b"estimated_size_bytes"})
_BATCH = 256


def compute_range_id(sst: SSTable) -> str:
    """Hex SHA-256 over ``len(key) key | len(value) value |`` per record, then the writer metadata."""
    return _range_id(sst.iter_records(), sst)


def _range_id(records: Iterable[tuple[bytes, bytes]], sst: SSTable) -> str:
    h = hashlib.sha256()
    parts: list[bytes] = []
    append = parts.append
    for key, value in records:
        append(b"%d%s|%d%s|" % (len(key), key, len(value), value))
        if len(parts) >= _BATCH:
            h.update(b"".join(parts))
            parts.clear()
    h.update(b"".join(parts))
    metadata = {k: v for k, v in sst.raw_user_properties.items() if k not in WRITER_ADDED_PROPERTIES}
    IdentityWriter(h).add_string_map(metadata)
    return h.hexdigest()


def range_id_of_bytes(data: bytes, *, verify_checksums: bool = True) -> str:
    return compute_range_id(SSTable.from_bytes(data, verify_checksums=verify_checksums))


def verify_range_file(data: bytes, expected_id: str) -> SSTable:
    """Parse ``data`` and check it hashes to ``expected_id``; returns the parsed table for further reading."""
    sst = SSTable.from_bytes(data)
    _check(_range_id(sst.iter_records(), sst), expected_id)
    return sst


def verified_records(data: bytes, expected_id: str) -> tuple[SSTable, list[tuple[bytes, bytes]]]:
    """Like :func:`verify_range_file`, with the (key, raw value) records in key order: the file's blocks are
    walked once for both the hash and the caller, who can then compare records without reading them again."""
    sst = SSTable.from_bytes(data)
    records = list(sst.iter_records())
    _check(_range_id(records, sst), expected_id)
    return sst, records


def _check(actual: str, expected_id: str) -> None:
    if actual != expected_id.lower():
        raise RangeIdMismatchError(
            f"range file content hashes to {actual}, not to the expected ID {expected_id}: the file is "
            "corrupt, truncated in a way the format did not catch, or stored under the wrong name"
        )
