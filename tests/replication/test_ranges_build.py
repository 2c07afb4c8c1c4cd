"""The benchmarks' ranges builder (``benchmarks/_ranges_build.py``) makes repositories lakeFS takes as its own.

It writes objects, range files and a metarange straight into MinIO or a local directory and only creates the
commit record through lakeFS, so everything else is checked through clients nobody here wrote: lakeFS's REST API
lists and stats the objects, boto3 reads them through lakeFS's S3 gateway, lakeFS commits on top (re-reading the
built range that the new key falls in and reusing the others as they are), and a mirror of it syncs and validates.
"""

from __future__ import annotations

import hashlib

import pytest

from benchmarks._ranges_build import RangeSplit, breaks_after, build_with_ranges, fnv1a64
from lakefs_mirror_dagster.graveler import RangeRef, SSTable, iter_range_refs
from lakefs_mirror_dagster.lakefs import LakeFSClient

from .conftest import assert_ref_complete, content

OBJECTS = 1_200


def test_fnv1a64_matches_go() -> None:
    """Go's ``hash/fnv`` New64a vectors: the range cuts depend on it."""
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8


def test_range_cut_rule() -> None:
    split = RangeSplit(raggedness=1 << 62, min_range_bytes=10, max_range_bytes=100)
    assert not breaks_after(b"k", 9, RangeSplit(raggedness=1, min_range_bytes=10))  # too small to end
    assert breaks_after(b"k", 100, split)  # full
    assert not breaks_after(b"k", 99, split)  # the hash decides: 1 in 2**62
    assert breaks_after(b"k", 50, RangeSplit(raggedness=1))
    with pytest.raises(ValueError):
        RangeSplit(raggedness=0)


def _path(i: int) -> str:
    return f"tables/events/part-{i:05d}.bin"


def _body(i: int) -> bytes:
    return content(_path(i), 100 + i % 57)


def _ranges(client: LakeFSClient, repo: str, metarange_id: str) -> list[RangeRef]:
    return list(iter_range_refs(SSTable.from_bytes(client.get_metadata_object(repo, "meta_range", metarange_id))))


@pytest.mark.parametrize("source_region", ["region-a", "region-b"], ids=["minio", "local"])
def test_built_repository_is_read_committed_on_and_mirrored(
    source_region, lakefs_env, service_for, unique_name
) -> None:
    region = lakefs_env.region(source_region)
    source = service_for(source_region)
    client = source.client(source_region)
    repo, mirror = unique_name("built"), unique_name("mirror")
    namespace = region.namespace_for(repo)
    client.create_repository(repo, namespace)
    made = build_with_ranges(
        client,
        repo,
        namespace,
        blockstore=region.blockstore,
        objects=OBJECTS,
        path_of=_path,
        payload=_body,
        split=RangeSplit(raggedness=200),  # several ranges (the cuts depend on the keys only)
    )
    assert client.get_branch_head(repo, "main") == made.commit_id
    built_ranges = _ranges(client, repo, made.metarange_id)
    assert [r.range_id for r in built_ranges] == made.range_ids and len(made.range_ids) >= 3
    assert sum(r.count for r in built_ranges) == OBJECTS

    # lakeFS's REST API lists and stats the built commit; its S3 gateway serves the bytes
    listed = list(client.list_objects(repo, made.commit_id))
    assert [o.path for o in listed] == [_path(i) for i in range(OBJECTS)]
    stat = client.stat_object(repo, made.commit_id, _path(7))
    assert stat.size_bytes == len(_body(7))
    assert stat.checksum == hashlib.md5(_body(7)).hexdigest()
    # lakeFS reports a local object by its absolute path: local://<blockstore path>/<repo>/data/...
    at = namespace if region.minio else f"local://{region.blockstore['local']['path']}/{repo}"
    assert stat.physical_address.startswith(f"{at}/data/")
    gateway = region.s3_gateway_client()
    assert gateway.get_object(Bucket=repo, Key=f"main/{_path(1111)}")["Body"].read() == _body(1111)

    # lakeFS commits on top: the range the new key falls in is rewritten, every other built range is kept
    new_key = f"{_path(OBJECTS // 2)}.new"
    # lakeFS enters (and rewrites) the first range whose max key is not below the new key
    holder = next(i for i, r in enumerate(built_ranges) if new_key.encode() <= r.max_key)
    client.upload_object(repo, "main", new_key, b"one more object")
    second = client.commit(repo, "main", "one object on top of the built ones")
    after = {r.range_id for r in _ranges(client, repo, second.metarange_id)}
    kept = set(made.range_ids) - {made.range_ids[holder]}
    assert kept <= after and made.range_ids[holder] not in after
    assert sum(1 for _ in client.list_objects(repo, "main")) == OBJECTS + 1

    # and a mirror of it syncs and validates
    source.create_mirror(
        source_repository=repo,
        name=mirror,
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(mirror),
    )
    destination = service_for("region-c")
    [result] = destination.sync(name=mirror)
    assert result.ok, result.to_json()
    [main] = [r for r in result.refs if r.name == "main"]
    assert main.mirror_commit == second.id and main.stats.objects_copied == OBJECTS + 1
    assert_ref_complete(destination, mirror, second.id)
    mirrored = lakefs_env.region("region-c").s3_gateway_client()
    assert mirrored.get_object(Bucket=mirror, Key=f"main/{_path(42)}")["Body"].read() == _body(42)
