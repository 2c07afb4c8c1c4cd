"""Many objects in one lakeFS data partition are looked up at the destination by listing it, not by a HEAD
each: before copying (what is already there) and when validating (is everything there)."""

from __future__ import annotations

from collections.abc import Iterator

from lakefs_mirror_dagster.storage import ObjectInfo, ObjectStat, relative_to_namespace
from lakefs_mirror_dagster.storage.presence import MIN_PER_DIRECTORY
from lakefs_mirror_dagster.storage.uri import join_namespace

from .conftest import assert_mirror_equals_source, content

OBJECTS = MIN_PER_DIRECTORY + 50


def make_source(lakefs_env, service_for, unique_name):  # type: ignore[no-untyped-def]
    """A source repository whose one commit holds OBJECTS objects (uploaded together: one data partition),
    and a mirror of it in region-b that was never synced."""
    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo, mirror = unique_name("listed"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    keys = [f"data/file-{i:04}" for i in range(OBJECTS)]
    for key in keys:
        src.upload_object(repo, "main", key, content(key, 100))
    src.commit(repo, "main", f"{OBJECTS} objects")
    svc_a.create_mirror(
        source_repository=repo,
        name=mirror,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(mirror),
    )
    return src, repo, mirror, keys


def destination_uri(src, repo: str, key: str, dst_namespace: str) -> str:  # type: ignore[no-untyped-def]
    """Where the mirror keeps the object of ``key``: the same relative address under its namespace."""
    source_namespace = src.get_repository(repo).storage_namespace
    address = relative_to_namespace(source_namespace, src.stat_object(repo, "main", key).physical_address)
    assert address is not None
    return join_namespace(dst_namespace, address)


def test_a_dense_partition_costs_listings_not_heads(lakefs_env, service_for, unique_name, monkeypatch) -> None:
    src, repo, mirror, keys = make_source(lakefs_env, service_for, unique_name)
    svc_b = service_for("region-b")
    record = next(svc_b.my_mirrors(name=mirror))
    store = svc_b.destination_store(record.storage_id)
    already_there = destination_uri(src, repo, keys[0], record.storage_namespace)
    stale = destination_uri(src, repo, keys[1], record.storage_namespace)
    store.write_bytes(already_there, content(keys[0], 100))
    store.write_bytes(stale, b"an older, shorter object")

    heads: list[str] = []
    listings: list[str] = []
    original_stat, original_list = store.stat, store.list_prefix

    def stat(uri: str) -> ObjectStat | None:
        if "/_lakefs/" not in uri:
            heads.append(uri)
        return original_stat(uri)

    def list_prefix(prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        listings.append(prefix)
        return original_list(prefix, start_after=start_after)

    monkeypatch.setattr(store, "stat", stat)
    monkeypatch.setattr(store, "list_prefix", list_prefix)
    [result] = svc_b.sync(name=mirror)
    assert result.ok, result.to_json()
    [main] = [r for r in result.refs if r.name == "main"]
    assert (main.stats.objects_copied, main.stats.objects_skipped) == (OBJECTS - 1, 1)
    assert heads == [], "objects of a dense partition were HEADed one by one"
    assert listings, "the destination's data partition was never listed"
    dst = svc_b.client("region-b")
    assert dst.get_object(mirror, "main", keys[1]) == content(keys[1], 100), "the stale object was kept"
    assert_mirror_equals_source(src, repo, dst, mirror)


def test_an_object_the_listing_misses_blocks_the_ref(lakefs_env, service_for, unique_name, monkeypatch) -> None:
    """Validation by listing still finds a missing object: here the destination acknowledged a write it
    never stored. The branch stays where it was, and the next sync repairs it."""
    src, repo, mirror, keys = make_source(lakefs_env, service_for, unique_name)
    svc_b = service_for("region-b")
    record = next(svc_b.my_mirrors(name=mirror))
    store = svc_b.destination_store(record.storage_id)
    lost = destination_uri(src, repo, keys[7], record.storage_namespace)
    original_write, original_copy = store.write_stream, store.server_side_copy

    def write_stream(uri, stream, size=None):  # type: ignore[no-untyped-def]
        if uri == lost:
            return ObjectStat(size=len(stream.read()))
        return original_write(uri, stream, size)

    def server_side_copy(src_uri: str, dst_uri: str) -> ObjectStat:
        if dst_uri == lost:
            return ObjectStat(size=100)
        return original_copy(src_uri, dst_uri)

    monkeypatch.setattr(store, "write_stream", write_stream)
    monkeypatch.setattr(store, "server_side_copy", server_side_copy)
    [blocked] = svc_b.sync(name=mirror)
    [main] = [r for r in blocked.refs if r.name == "main"]
    assert main.action == "blocked" and "missing" in (main.error or ""), main.to_json()
    assert keys[7] in (main.error or "")
    assert "main" not in {b.id for b in svc_b.client("region-b").list_branches(mirror)}

    monkeypatch.setattr(store, "write_stream", original_write)
    monkeypatch.setattr(store, "server_side_copy", original_copy)
    [repaired] = svc_b.sync(name=mirror)
    assert repaired.ok, repaired.to_json()
    assert_mirror_equals_source(src, repo, svc_b.client("region-b"), mirror)
