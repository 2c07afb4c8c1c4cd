"""Build a committed lakeFS repository the way lakeFS's own storage holds it: objects, range files, a metarange.

The link builder (``_repositories.build_repository(method="links")``) costs three requests per object, two of them to
lakeFS (its rate is in benchmarks/README.md). This one writes what a
commit leaves behind, directly:

1. each object's bytes into the repository's storage namespace (MinIO or a local directory, as lakeFS's local
   adapter lays it out) at a *relative* address shaped like lakeFS's
   upload paths (``data/<partition>/<id>``, a new partition every 50,000 objects), with obstore's async PUTs,
   many in flight on one event loop;
2. the range files and the metarange, with the suite's sstable writer (``tests/graveler/sstable_writer.py``,
   which lays files out like pebble), cut where lakeFS's ``DiskWriter.ShouldBreakAtKey`` cuts them (FNV-1a of
   the key modulo ``committed.permanent.range_raggedness_entries``, or the range reaching
   ``max_range_size_bytes``), named by the content-hash ID lakeFS computes (``graveler.range_id``), stored at
   ``<namespace>/_lakefs/<id>``;
3. the commit through lakeFS (``CreateCommitRecord``, as the engine creates commits at a mirror; lakeFS
   recomputes and checks its ID), parent = ``main``'s head, then ``main`` hard-reset to it.

What it skips: staging (no ``get_physical_address``/``link_physical_address``), so lakeFS never sees the objects
before the commit; the entries are what a link would have recorded (size, MD5 ETag, mtime, content type).
A range's size estimate is the file's size, where pebble's estimate counts the block being filled uncompressed.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakefs_mirror_dagster.graveler import AddressType, commit_id, entry_identity, range_id_of_bytes
from lakefs_mirror_dagster.lakefs import Commit, LakeFSClient
from lakefs_mirror_dagster.replication.validation import METADATA_PREFIX
from lakefs_mirror_dagster.storage.uri import parse_uri
from tests.graveler.sstable_writer import encode_entry, encode_range_data, write_lakefs_file

__all__ = ["RangeBuild", "RangeSplit", "breaks_after", "build_with_ranges", "fnv1a64", "namespace_store"]

#: lakeFS's upload path provider starts a new ``data/<partition>/`` every 50,000 addresses.
PARTITION_SIZE = 50_000
CONTENT_TYPE = "application/octet-stream"
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class RangeSplit:
    """lakeFS's ``committed.permanent`` settings that decide where a range ends (its defaults)."""

    raggedness: int = 50_000
    min_range_bytes: int = 0
    max_range_bytes: int = 20 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.raggedness < 1 or self.max_range_bytes < 1 or self.min_range_bytes < 0:
            raise ValueError(f"range split settings must be positive: {self}")


def fnv1a64(data: bytes) -> int:
    """Go's ``hash/fnv`` New64a over ``data``."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK64
    return h


def breaks_after(key: bytes, range_bytes: int, split: RangeSplit) -> bool:
    """``DiskWriter.ShouldBreakAtKey``: does the range end after ``key``, its size so far being ``range_bytes``?"""
    if range_bytes < split.min_range_bytes:
        return False
    if range_bytes >= split.max_range_bytes:
        return True
    return fnv1a64(key) % split.raggedness == 0


@dataclass
class RangeBuild:
    """What the builder committed."""

    commit_id: str
    metarange_id: str
    range_ids: list[str]
    objects: int
    #: seconds of each step: objects and range files written, commit created and main moved
    seconds: dict[str, float]


Record = tuple[bytes, bytes, bytes]  # (key, identity, data), as the sstable writer takes them


def namespace_store(namespace: str, blockstore: Mapping[str, Any]) -> Any:
    """An obstore store rooted at ``namespace`` in a region's storage; ``blockstore`` is the region's lakeFS
    ``blockstore`` section: ``s3`` (MinIO, path style, static credentials) or ``local`` (a directory that lakeFS's
    local adapter maps ``local://<name>/<path>`` under)."""
    from obstore.store import LocalStore, S3Store

    uri = parse_uri(namespace)
    kind = blockstore.get("type")
    if uri.scheme == "local" and kind == "local" and not uri.is_local_absolute:
        root = Path(blockstore["local"]["path"]) / uri.bucket / uri.key.strip("/")
        return LocalStore(prefix=root, mkdir=True)
    if uri.scheme == "s3" and kind == "s3":
        s3 = blockstore["s3"]
        return S3Store(
            uri.bucket,
            prefix=uri.key.strip("/") or None,
            config={
                "endpoint": s3["endpoint"],
                "access_key_id": s3["credentials"]["access_key_id"],
                "secret_access_key": s3["credentials"]["secret_access_key"],
                "region": s3.get("region", "us-east-1"),
                "virtual_hosted_style_request": False,
            },
            client_options={"allow_http": True},
            retry_config={"max_retries": 5},
        )
    raise ValueError(
        f"the range builder writes to s3 (MinIO) or local namespaces of their own store, not {namespace!r} "
        f"on a {kind!r} blockstore"
    )


def _range_file(records: list[Record]) -> tuple[str, bytes, Record]:
    """One range file: its ID (as ``graveler.range_id`` computes it), bytes, and its metarange record."""
    written = write_lakefs_file(records, "ranges")
    range_id = range_id_of_bytes(written.data, verify_checksums=False)
    if range_id != written.range_id:  # two independent computations of lakeFS's ID disagree: a bug, not data
        raise AssertionError(f"range ID {range_id} != the writer's {written.range_id}")
    data = encode_range_data(written.min_key, written.max_key, len(written.data), written.count)
    return range_id, written.data, (written.max_key, range_id.encode(), data)


class _Ranges:
    """Records in key order cut into range files as lakeFS cuts them; each finished file is handed on."""

    def __init__(self, split: RangeSplit) -> None:
        self.split = split
        self.records: list[Record] = []
        self.size = 0

    def add(self, record: Record) -> list[Record] | None:
        """Add one record; the range's records when it ends after this one."""
        self.records.append(record)
        self.size += len(record[0]) + len(record[1]) + len(record[2]) + 8
        if breaks_after(record[0], self.size, self.split):
            return self.take()
        return None

    def take(self) -> list[Record] | None:
        done, self.records, self.size = self.records, [], 0
        return done or None


async def _write_all(
    store: Any,
    items: Iterable[tuple[str, bytes, Record]],
    split: RangeSplit,
    concurrency: int,
    on_object: Callable[[int], None],
) -> tuple[str, list[str]]:
    """PUT every object (``concurrency`` PUTs in flight, fed through a bounded queue) and every range file, then
    the metarange; returns (metarange ID, range IDs). Range files are encoded in a thread while the PUTs go on."""
    import obstore

    queue: asyncio.Queue[tuple[str, bytes] | None] = asyncio.Queue(maxsize=concurrency * 4)
    ranges = _Ranges(split)
    meta_records: list[Record] = []
    range_ids: list[str] = []

    async def putter() -> None:
        while (item := await queue.get()) is not None:
            await obstore.put_async(store, *item)

    async def put_range(records: list[Record]) -> None:
        range_id, data, meta = await asyncio.to_thread(_range_file, records)
        await obstore.put_async(store, f"{METADATA_PREFIX}{range_id}", data)
        meta_records.append(meta)
        range_ids.append(range_id)

    # A failed PUT fails the group: the other tasks are cancelled and the error raised.
    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(putter())
        pending_range: asyncio.Task[None] | None = None
        for count, (address, body, record) in enumerate(items, 1):
            await queue.put((address, body))
            on_object(count)
            if (full := ranges.add(record)) is not None:
                if pending_range is not None:  # one range file in the making at a time keeps order and memory
                    await pending_range
                pending_range = group.create_task(put_range(full))
        if pending_range is not None:
            await pending_range
        if (last := ranges.take()) is not None:
            await put_range(last)
        for _ in range(concurrency):
            await queue.put(None)
    metarange = write_lakefs_file(meta_records, "metaranges")
    metarange_id = range_id_of_bytes(metarange.data, verify_checksums=False)
    await obstore.put_async(store, f"{METADATA_PREFIX}{metarange_id}", metarange.data)
    return metarange_id, range_ids


def _items(
    count: int, path_of: Callable[[int], str], payload: Callable[[int], bytes]
) -> Iterator[tuple[str, bytes, Record]]:
    """(relative address, bytes, range record) per object in key order, entries as a link would record them."""
    run = secrets.token_hex(4)
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    previous = b""
    for i in range(count):
        key = path_of(i).encode()
        if key <= previous:
            raise ValueError(f"object paths must sort in index order: {key!r} after {previous!r}")
        previous = key
        body = payload(i)
        etag = hashlib.md5(body, usedforsecurity=False).hexdigest()
        address = f"data/g{run}{i // PARTITION_SIZE:06d}/{run}{i:012d}"
        data = encode_entry(
            address,
            len(body),
            e_tag=etag,
            last_modified=(seconds, nanos),
            address_type=AddressType.RELATIVE,
            content_type=CONTENT_TYPE,
        )
        yield address, body, (key, entry_identity(len(body), etag, None, CONTENT_TYPE), data)


def build_with_ranges(
    client: LakeFSClient,
    repo: str,
    namespace: str,
    *,
    blockstore: Mapping[str, Any],
    objects: int,
    path_of: Callable[[int], str],
    payload: Callable[[int], bytes],
    split: RangeSplit | None = None,
    concurrency: int = 64,
    message: str = "",
    on_object: Callable[[int], None] = lambda _done: None,
) -> RangeBuild:
    """Write ``objects`` objects (``path_of(i)`` must sort in ``i`` order) into the existing repository ``repo``
    whose namespace is ``namespace`` in the storage ``blockstore`` describes (``namespace_store``), and commit them
    on ``main`` (see module doc)."""
    if objects < 1 or concurrency < 1:
        raise ValueError("objects and concurrency must be at least 1")
    store = namespace_store(namespace, blockstore)
    started = time.monotonic()
    metarange_id, range_ids = asyncio.run(
        _write_all(store, _items(objects, path_of, payload), split or RangeSplit(), concurrency, on_object)
    )
    written = time.monotonic()
    parent = client.get_commit(repo, client.get_branch_head(repo, "main"))
    message = message or f"{objects} objects"
    creation, committer = int(time.time()), client.whoami()
    commit = Commit(
        id=commit_id(committer, message, metarange_id, creation, {}, [parent.id]),
        parents=(parent.id,),
        committer=committer,
        message=message,
        creation_date=creation,
        metarange_id=metarange_id,
        metadata={},
        generation=parent.generation + 1,
    )
    client.create_commit_record(repo, commit)
    client.hard_reset_branch(repo, "main", commit.id)
    seconds = {"objects and ranges": written - started, "commit": time.monotonic() - written}
    return RangeBuild(commit.id, metarange_id, range_ids, objects, seconds)
