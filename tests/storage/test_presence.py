"""listed_stats: many objects' presence from one LIST per dense directory, with HEADs left for the rest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from lakefs_mirror_dagster.storage import (
    Blockstore,
    CopyTask,
    LocalBlockstore,
    ObjectInfo,
    S3Blockstore,
    TransferPool,
    listed_stats,
)


class CountingStore(LocalBlockstore):
    """A local store that counts HEADs and listings, and how many objects the listings delivered."""

    def __init__(self, root: str) -> None:
        super().__init__(root=root)
        self.stats = 0
        self.listings: list[str] = []
        self.listed = 0

    def stat(self, uri: str):  # type: ignore[no-untyped-def]
        self.stats += 1
        return super().stat(uri)

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        self.listings.append(uri_prefix)
        for info in super().list_prefix(uri_prefix, start_after=start_after):
            self.listed += 1
            yield info


@pytest.fixture
def store(tmp_path) -> CountingStore:  # type: ignore[no-untyped-def]
    (tmp_path / "block").mkdir()
    return CountingStore(str(tmp_path / "block"))


def fill(store: Blockstore, directory: str, count: int, size: int = 3) -> list[str]:
    uris = [f"{directory}obj-{i:04}" for i in range(count)]
    for uri in uris:
        store.write_bytes(uri, b"x" * size)
    return uris


def test_a_dense_directory_is_listed_once_and_settles_present_and_absent(store: CountingStore) -> None:
    present = fill(store, "local://ns/data/p1/", 6)
    absent = ["local://ns/data/p1/gone-1", "local://ns/data/p1/gone-2"]
    settled = listed_stats(store, present + absent, min_per_directory=4)
    assert store.listings == ["local://ns/data/p1/"]
    assert {uri: s.size if s else None for uri, s in settled.items()} == {
        **dict.fromkeys(present, 3),
        **dict.fromkeys(absent, None),
    }
    assert all(store.stat(uri) is None for uri in absent)


def test_a_sparse_directory_is_left_to_heads(store: CountingStore) -> None:
    dense = fill(store, "local://ns/data/p1/", 5)
    sparse = fill(store, "local://ns/data/p2/", 2)
    settled = listed_stats(store, dense + sparse, min_per_directory=4)
    assert store.listings == ["local://ns/data/p1/"]
    assert set(settled) == set(dense)


def test_a_listing_stops_at_its_budget_and_settles_only_what_it_saw(store: CountingStore) -> None:
    """A directory far larger than the objects wanted from it costs a bounded listing; what it did not reach
    stays unsettled (a HEAD), never guessed absent."""
    early = fill(store, "local://ns/data/p1/a-", 2)
    fill(store, "local://ns/data/p1/m-", 50)  # between the wanted names, and ten times the budget
    wanted = [*early, *fill(store, "local://ns/data/p1/z-", 2), "local://ns/data/p1/z-missing"]
    settled = listed_stats(store, wanted, min_per_directory=4, overscan=2)
    assert store.listed <= 2 * len(wanted) + 1
    assert {uri: s.size if s else None for uri, s in settled.items()} == dict.fromkeys(early, 3), (
        "only what the listing reached may be settled, and nothing it did not reach guessed absent"
    )


def test_a_listing_covers_only_the_span_of_wanted_names(store: CountingStore) -> None:
    """Ranges of one commit share a data directory but want disjoint spans of it: each lists its own span
    (from just before its first name to its last), and every name in the span it did not see is absent."""
    everything = fill(store, "local://ns/data/p1/", 300)
    wanted = [*everything[100:200:2], "local://ns/data/p1/obj-0150-gone"]
    settled = listed_stats(store, wanted, min_per_directory=4)
    assert store.listed <= 100 + 1, "names before the first wanted or past the last one were listed"
    assert {uri: s.size if s else None for uri, s in settled.items()} == {
        **dict.fromkeys(everything[100:200:2], 3),
        "local://ns/data/p1/obj-0150-gone": None,
    }


def test_pool_skips_objects_the_listing_found_and_heads_nothing(store: CountingStore, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "src").mkdir()
    source = LocalBlockstore(root=tmp_path / "src")
    names = [f"data/p1/obj-{i:04}" for i in range(8)]
    for name in names:
        source.write_bytes(f"local://ns/{name}", b"payload")
    store.write_bytes(f"local://ns/{names[0]}", b"payload")  # already there
    store.write_bytes(f"local://ns/{names[1]}", b"short")  # there with another size: copied again
    tasks = [CopyTask(source, f"local://ns/{n}", store, f"local://ns/{n}", 7) for n in names]
    known = listed_stats(store, [t.dst_uri for t in tasks], min_per_directory=4)
    store.stats = 0
    summary = TransferPool(concurrency=2).run(tasks, known)
    assert (summary.copied, summary.skipped, summary.failed) == (7, 1, [])
    assert store.stats == 0, "every destination was settled by the listing"
    assert all(store.read_bytes(f"local://ns/{n}") == b"payload" for n in names)


def test_settles_on_real_s3_with_etags(s3_store: S3Blockstore, bucket: str) -> None:
    directory = f"s3://{bucket}/ns/data/p1/"
    present = fill(s3_store, directory, 5)
    settled = listed_stats(s3_store, [*present, f"{directory}absent"], min_per_directory=4)
    assert settled[f"{directory}absent"] is None
    for uri in present:
        head = s3_store.stat(uri)
        assert head is not None and settled[uri] == head  # same size and ETag as a HEAD reports


def test_bad_parameters_are_refused(store: CountingStore) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        listed_stats(store, [], min_per_directory=0)


def test_ranges_sharing_a_directory_list_their_own_spans_and_still_catch_bad_objects(
    s3_store: S3Blockstore, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ranges of one commit whose objects share one data directory on S3 (as lakeFS's uploads do): each
    range's validation lists only its half of the directory, and a missing object (the first of its span),
    one of the wrong size (the last) and one with the wrong MD5 (in between) still fail that range."""
    from lakefs_mirror_dagster.replication import metadata_uri, validate_range
    from tests.graveler.sstable_writer import encode_entry, write_lakefs_file

    namespace, count = f"s3://{bucket}/ns", 300
    bodies = {f"data/p1/o{i:04d}": f"object {i:04d}".encode() for i in range(count)}
    records = [
        (f"k/{i:04d}".encode(), bytes(32), encode_entry(a, len(b), e_tag=hashlib.md5(b).hexdigest(), address_type=1))
        for i, (a, b) in enumerate(bodies.items())
    ]
    ranges = [write_lakefs_file(records[: count // 2]), write_lakefs_file(records[count // 2 :])]
    for lf in ranges:
        s3_store.write_bytes(metadata_uri(namespace, lf.range_id), lf.data)
    missing, short, other_md5 = "data/p1/o0150", "data/p1/o0299", "data/p1/o0200"
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda a: s3_store.write_bytes(f"{namespace}/{a}", bodies[a]), set(bodies) - {missing}))
    s3_store.write_bytes(f"{namespace}/{short}", bodies[short][:-1])
    s3_store.write_bytes(f"{namespace}/{other_md5}", bodies[other_md5].upper())

    listed: list[str] = []
    original = s3_store.list_prefix

    def counting(uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        for info in original(uri_prefix, start_after=start_after):
            listed.append(info.uri)
            yield info

    monkeypatch.setattr(s3_store, "list_prefix", counting)
    good, bad = (validate_range(s3_store, namespace, lf.range_id) for lf in ranges)
    assert good.ok and good.objects == count // 2, good
    assert not bad.ok and bad.missing_count == 3, bad
    assert [m.split(" (")[1].split(")")[0] for m in bad.missing] == [missing, other_md5, short]
    assert len(listed) <= count + 2, f"{len(listed)} names listed for {count} objects: the ranges overlapped"
