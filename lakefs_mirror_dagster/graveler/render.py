"""Render a range/metarange/dump file for people (``lakefs-mirror sst cat FILE [--json]``).

Shows what an operator needs to judge a file: its properties, every record decoded, which entry
identity formula each record follows, and the recomputed content-hash ID (the file's rightful name).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from .addresses import AddressType
from .ident import entry_identity, entry_identity_legacy
from .range_id import compute_range_id
from .ranges import (
    FILE_TYPE_METARANGES,
    file_type,
    iter_branches,
    iter_commits,
    iter_entries,
    iter_range_refs,
    iter_tags,
)
from .sstable import SSTable
from .varint import VarintError, decode_uvarint

__all__ = ["describe_sst", "format_sst"]

_STRING_PROPS = frozenset(
    {
        "rocksdb.comparator",
        "rocksdb.compression",
        "rocksdb.compression_options",
        "rocksdb.merge.operator",
        "rocksdb.property.collectors",
        "rocksdb.prefix.extractor.name",
        "rocksdb.block.based.table.prefix.filtering",
        "rocksdb.block.based.table.whole.key.filtering",
    }
)
_FIXED_PROPS = frozenset(
    {
        "rocksdb.block.based.table.index.type",
        "rocksdb.external_sst_file.version",
        "rocksdb.external_sst_file.global_seqno",
    }
)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _key_fields(key: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {"key": _text(key)}
    try:
        key.decode("utf-8")
    except UnicodeDecodeError:
        out["key_hex"] = key.hex()
    return out


def _address_type_name(value: int) -> str:
    try:
        return AddressType(value).name
    except ValueError:
        return str(value)


def _pebble_property(name: str, raw: bytes) -> Any:
    if name in _STRING_PROPS:
        return _text(raw)
    if name in _FIXED_PROPS and len(raw) in (4, 8):
        return struct.unpack("<I" if len(raw) == 4 else "<Q", raw)[0]
    try:
        value, end = decode_uvarint(raw, 0)
    except VarintError:
        return raw.hex()
    return value if end == len(raw) else raw.hex()


def _identity_formula(identity: bytes, address: str, size: int, e_tag: str, metadata: Any, ctype: str) -> str:
    if identity == entry_identity(size, e_tag, metadata, ctype):
        return "current"
    if identity == entry_identity_legacy(address, size, e_tag, metadata):
        return "pre-2021"
    return "unrecognised"


def describe_sst(data: bytes) -> dict[str, Any]:
    """Everything :func:`format_sst` shows, as JSON-ready data."""
    sst = SSTable.from_bytes(data)
    kind = file_type(sst)
    entity = sst.user_properties.get("entity")
    records: list[dict[str, Any]] = []
    if kind == FILE_TYPE_METARANGES:
        for ref in iter_range_refs(sst):
            records.append(
                {
                    "range_id": ref.range_id,
                    "min_key": _text(ref.min_key),
                    "max_key": _text(ref.max_key),
                    "estimated_size": ref.estimated_size,
                    "count": ref.count,
                }
            )
    elif entity == "commit":
        for key, identity, c in iter_commits(sst):
            records.append(
                {
                    **_key_fields(key),
                    "identity": _text(identity),
                    "id": c.id,
                    "committer": c.committer,
                    "message": c.message,
                    "creation_date": c.creation_date.isoformat(),
                    "meta_range_id": c.meta_range_id,
                    "metadata": dict(c.metadata),
                    "parents": list(c.parents),
                    "version": c.version,
                    "generation": c.generation,
                    "id_matches_content": c.computed_id() == c.id,
                }
            )
    elif entity == "branch":
        for key, identity, branch in iter_branches(sst):
            records.append({**_key_fields(key), "identity": _text(identity), "commit_id": branch.commit_id})
    elif entity == "tag":
        for key, identity, tag in iter_tags(sst):
            records.append({**_key_fields(key), "identity": _text(identity), "commit_id": tag.commit_id})
    else:
        for key, identity, e in iter_entries(sst):
            records.append(
                {
                    **_key_fields(key),
                    "address": e.address,
                    "address_type": _address_type_name(e.address_type),
                    "full_address": e.is_full_address,
                    "size": e.size,
                    "e_tag": e.e_tag,
                    "last_modified": e.last_modified.isoformat(),
                    "content_type": e.content_type,
                    "metadata": dict(e.metadata),
                    "identity": identity.hex(),
                    "identity_formula": _identity_formula(
                        identity, e.address, e.size, e.e_tag, e.metadata, e.content_type
                    ),
                }
            )
    return {
        "type": kind,
        "entity": entity,
        "range_id": compute_range_id(sst),
        "file_size": sst.size,
        "index": "two-level" if sst.index_type == 2 else "single-level",
        "data_blocks": len(sst.data_block_handles()),
        "user_properties": {
            k: v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            for k, v in sst.user_properties.items()
        },
        "properties": {
            k: _pebble_property(k, v) for k, v in sorted(sst.properties.items()) if k.startswith("rocksdb.")
        },
        "records": records,
    }


def _table(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["(no records)"]
    columns = [c for c in rows[0] if c not in ("metadata", "key_hex")]
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return lines


def _cell(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def format_sst(data: bytes, *, as_json: bool) -> str:
    """Render a lakeFS sstable: JSON (stable, for tools) or an aligned text report (for people)."""
    info = describe_sst(data)
    if as_json:
        return json.dumps(info, indent=2, ensure_ascii=False)
    head = [
        f"type:        {info['type']}" + (f" (entity {info['entity']})" if info["entity"] else ""),
        f"range id:    {info['range_id']}  (recomputed from content)",
        f"file size:   {info['file_size']} bytes, {info['data_blocks']} data blocks, {info['index']} index",
        "user properties:",
        *(f"  {k} = {v}" for k, v in sorted(info["user_properties"].items())),
        "table properties:",
        *(f"  {k} = {v}" for k, v in info["properties"].items()),
        f"records ({len(info['records'])}):",
    ]
    return "\n".join(head + _table(info["records"])) + "\n"
