"""A big source repository in seconds: objects put straight into MinIO, ranges and a commit written by us.

Creating 20,000 objects through lakeFS's API costs one request each (~150/s on a busy 2-core machine),
far over the test's time budget, and lakeFS's bulk import gives FULL addresses, which a mirror does not
copy. So the objects go to ``<namespace>/data/...`` as a few tar files MinIO extracts server-side, and
their entries (RELATIVE addresses, as lakeFS's own uploads have) are written into range files in lakeFS's sstable format
(RocksDB v2 footer, CRC32C, uncompressed). A metarange names the ranges, and ``CreateCommitRecord`` puts
the commit (whose ID we compute from its fields) into the source repository, on a branch of its own.
The repository is then an ordinary lakeFS repository as far as a mirror can tell: lakeFS serves its
commits and metadata files, and the engine verifies every range against its ID before copying.
"""

from __future__ import annotations

import hashlib
import io
import struct
import tarfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import google_crc32c
from lakefs_mirror_devenv import MinioInstance

from lakefs_mirror_dagster.graveler import CommitData
from lakefs_mirror_dagster.graveler.commit_record import encode_commit_data
from lakefs_mirror_dagster.graveler.ident import commit_id, entry_identity
from lakefs_mirror_dagster.graveler.range_id import range_id_of_bytes
from lakefs_mirror_dagster.graveler.sstable import ROCKSDB_MAGIC, mask_crc
from lakefs_mirror_dagster.graveler.varint import encode_uvarint
from lakefs_mirror_dagster.lakefs import Commit, LakeFSClient

__all__ = ["SyntheticRange", "build_metarange", "build_range", "populate_big_branch"]

_SET_TRAILER = bytes([1]) + bytes(7)
_ENTRIES_PER_BLOCK = 256


def _pb_bytes(num: int, value: bytes) -> bytes:
    return encode_uvarint(num << 3 | 2) + encode_uvarint(len(value)) + value


def _pb_int(num: int, value: int) -> bytes:
    return encode_uvarint(num << 3) + encode_uvarint(value)


def _value(identity: bytes, data: bytes) -> bytes:
    """graveler's value envelope: zig-zag lengths (always even for non-negative lengths)."""
    return encode_uvarint(2 * len(identity)) + identity + encode_uvarint(2 * len(data)) + data


def _block(entries: Iterable[tuple[bytes, bytes]]) -> bytes:
    """One block without prefix compression and a single restart point (valid for any reader)."""
    out = bytearray()
    for key, value in entries:
        out += encode_uvarint(0) + encode_uvarint(len(key)) + encode_uvarint(len(value)) + key + value
    out += struct.pack("<I", 0) + struct.pack("<I", 1)
    return bytes(out)


def _sstable(records: list[tuple[bytes, bytes]], properties: dict[bytes, bytes]) -> bytes:
    """An sstable of SET records (user keys sorted), as lakeFS's pebble writer lays it out."""
    out = bytearray()

    def put(block: bytes) -> bytes:
        handle = encode_uvarint(len(out)) + encode_uvarint(len(block))
        trailer = bytes([0])
        out.extend(block + trailer + struct.pack("<I", mask_crc(google_crc32c.value(block + trailer))))
        return handle

    index: list[tuple[bytes, bytes]] = []
    for start in range(0, len(records), _ENTRIES_PER_BLOCK):
        chunk = records[start : start + _ENTRIES_PER_BLOCK]
        handle = put(_block((k + _SET_TRAILER, v) for k, v in chunk))
        index.append((chunk[-1][0] + _SET_TRAILER, handle))
    props = put(_block(sorted(properties.items())))
    metaindex = put(_block([(b"rocksdb.properties", props)]))
    index_handle = put(_block(index))
    footer = bytes([1]) + metaindex + index_handle
    footer += bytes(41 - len(footer)) + struct.pack("<I", 2) + ROCKSDB_MAGIC
    return bytes(out + footer)


@dataclass(frozen=True)
class SyntheticRange:
    range_id: str
    data: bytes
    min_key: bytes
    max_key: bytes
    count: int


def build_range(objects: list[tuple[str, str, int, str]]) -> SyntheticRange:
    """A range of ``(path, relative address, size, etag)`` objects, sorted by path."""
    objects = sorted(objects)
    records = []
    for path, address, size, etag in objects:
        entry = _pb_bytes(1, address.encode()) + _pb_int(3, size) + _pb_bytes(4, etag.encode()) + _pb_int(6, 1)
        records.append((path.encode(), _value(entry_identity(size, etag, {}), entry)))
    data = _sstable(records, {b"type": b"ranges"})
    keys = [r[0] for r in records]
    return SyntheticRange(range_id_of_bytes(data), data, keys[0], keys[-1], len(records))


def build_commits_range(commits: list[CommitData]) -> SyntheticRange:
    """A range of a refs dump's commits (keyed and identified by commit ID), as lakeFS's dump writes them."""
    records = sorted((c.id.encode(), _value(c.id.encode(), encode_commit_data(c))) for c in commits)
    data = _sstable(records, {b"type": b"ranges", b"entity": b"commit"})
    return SyntheticRange(range_id_of_bytes(data), data, records[0][0], records[-1][0], len(records))


def build_metarange(ranges: list[SyntheticRange]) -> tuple[str, bytes]:
    records = []
    for r in sorted(ranges, key=lambda r: r.max_key):
        info = _pb_bytes(1, r.min_key) + _pb_bytes(2, r.max_key) + _pb_int(3, len(r.data)) + _pb_int(4, r.count)
        records.append((r.max_key, _value(r.range_id.encode(), info)))
    data = _sstable(records, {b"type": b"metaranges"})
    return range_id_of_bytes(data), data


def _s3(minio: MinioInstance) -> object:
    return minio.s3_client(read_timeout=300)


def object_bytes(path: str, size: int) -> bytes:
    seed = hashlib.sha256(path.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def populate_big_branch(
    client: LakeFSClient,
    minio: MinioInstance,
    repo: str,
    namespace: str,
    branch: str,
    *,
    ranges: int,
    per_range: int,
    size: int = 64,
    threads: int = 4,
) -> tuple[Commit, dict[str, tuple[str, int]]]:
    """Put ``ranges * per_range`` objects under the repository's namespace in MinIO and commit them to a new
    ``branch`` (child of the default branch's head) as that many ranges. Returns the commit and
    path -> (relative address, size)."""
    bucket, _, prefix = namespace.removeprefix("s3://").partition("/")
    s3 = _s3(minio)
    objects: dict[str, tuple[str, int]] = {}
    for i in range(ranges * per_range):
        path = f"part-{i // per_range:02}/obj-{i:06}.bin"
        objects[path] = (f"data/synthetic{i // 1000:04}/obj{i:06}", size + i % 7)

    def put_tar(paths: list[str]) -> None:
        # MinIO extracts a tar PUT with Snowball-Auto-Extract into one object per member: one request for all.
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for path in paths:
                address, n = objects[path]
                info = tarfile.TarInfo(f"{prefix}/{address}" if prefix else address)
                info.size = n
                tar.addfile(info, io.BytesIO(object_bytes(path, n)))
        s3.put_object(  # type: ignore[attr-defined]
            Bucket=bucket,
            Key=f"snowball-{paths[0]}.tar",
            Body=buf.getvalue(),
            Metadata={"Snowball-Auto-Extract": "true"},
        )

    ordered = sorted(objects)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(put_tar, [ordered[i : i + 2500] for i in range(0, len(ordered), 2500)]))
    etags = {p: hashlib.md5(object_bytes(p, objects[p][1])).hexdigest() for p in ordered}
    paths = sorted(objects)
    built = []
    for r in range(ranges):
        chunk = paths[r * per_range : (r + 1) * per_range]
        built.append(build_range([(p, objects[p][0], objects[p][1], etags[p]) for p in chunk]))
    metarange_id, metarange = build_metarange(built)
    for item in [*((r.range_id, r.data) for r in built), (metarange_id, metarange)]:
        key = f"{prefix}/_lakefs/{item[0]}" if prefix else f"_lakefs/{item[0]}"
        s3.put_object(Bucket=bucket, Key=key, Body=item[1])  # type: ignore[attr-defined]

    repository = client.get_repository(repo)
    parent = client.get_commit(repo, client.get_branch_head(repo, repository.default_branch))
    created = int(time.time())
    message, committer, metadata = f"{len(objects)} synthetic objects", "tests", {"synthetic": "true"}
    cid = commit_id(committer, message, metarange_id, created, metadata, [parent.id])
    commit = Commit(
        id=cid,
        parents=(parent.id,),
        committer=committer,
        message=message,
        creation_date=created,
        metarange_id=metarange_id,
        metadata=metadata,
        generation=parent.generation + 1,
    )
    client.create_commit_record(repo, commit, force=True)
    client.create_branch(repo, branch, cid)
    return commit, objects
