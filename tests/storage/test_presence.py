"""listed_stats: many objects' presence from one LIST per dense directory, with HEADs left for the rest."""

from __future__ import annotations

from collections.abc import Iterator

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

    def list_prefix(self, uri_prefix: str) -> Iterator[ObjectInfo]:
        self.listings.append(uri_prefix)
        for info in super().list_prefix(uri_prefix):
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
    fill(store, "local://ns/data/p1/a-", 50)  # listed first, and ten times the budget
    wanted = [*fill(store, "local://ns/data/p1/z-", 4), "local://ns/data/p1/z-missing"]
    settled = listed_stats(store, wanted, min_per_directory=4, overscan=2)
    assert store.listed <= 2 * len(wanted) + 1
    assert not settled, "nothing wanted was reached, so nothing may be settled"


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
