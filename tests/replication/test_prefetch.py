"""MetadataPrefetch on a real lakeFS history: the metaranges of the commits ahead and the range each of them
adds are read before the pass asks, the bytes handed over are the source's own, and a read ahead that failed
is read again when asked for (so a fault surfaces as it did without the prefetch)."""

from __future__ import annotations

import threading
from collections import Counter

from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.replication import SourceReader
from lakefs_mirror_dagster.replication.prefetch import MetadataPrefetch
from lakefs_mirror_dagster.storage import Blockstore


class Counting:
    """A source that counts its reads per file and, if told, fails each file's first read."""

    def __init__(self, source: SourceReader, *, fail_first: bool = False) -> None:
        self.source = source
        self.fail_first = fail_first
        self.reads: Counter[str] = Counter()
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def read_metadata(self, kind: str, file_id: str) -> bytes:
        with self._lock:
            self.reads[file_id] += 1
            self.threads.add(threading.current_thread().name)
            first = self.reads[file_id] == 1
        if self.fail_first and first:
            raise OSError(f"injected: first read of {file_id}")
        return self.source.read_metadata(kind, file_id)

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        return self.source.object_location(commit_id, key, address)


def _history(region_a, unique_name, commits: int = 6) -> tuple[LakeFSClient, SourceReader, list[str]]:
    client = LakeFSClient(region_a.endpoint, region_a.access_key_id, region_a.secret_access_key)
    repo = unique_name("prefetch")
    client.create_repository(repo, region_a.namespace_for(repo))
    metaranges = []
    for i in range(commits):
        client.upload_object(repo, "main", f"k/{i:03d}", f"commit {i}\n".encode())
        metaranges.append(client.commit(repo, "main", f"c{i}").metarange_id)
    return client, SourceReader(repo, region_a.namespace_for(repo), client=client), metaranges


def test_files_ahead_are_read_before_they_are_asked_for(region_a, unique_name) -> None:
    client, source, metaranges = _history(region_a, unique_name)
    try:
        counting = Counting(source)
        prefetch = MetadataPrefetch(counting, metaranges, window=16, workers=4)
        try:
            prefetch.advance(0)
            first = prefetch.read_metadata("meta_range", metaranges[0])
            assert first == source.read_metadata("meta_range", metaranges[0])
            for i, metarange_id in enumerate(metaranges):
                prefetch.advance(i)
                assert prefetch.read_metadata("meta_range", metarange_id) == source.read_metadata(
                    "meta_range", metarange_id
                )
            assert prefetch.hits == len(metaranges) + 1
            # every metarange was read once, on the prefetch's threads, and so was the range each commit added
            assert all(counting.reads[m] == 1 for m in metaranges)
            assert all(t.startswith("metadata-prefetch") for t in counting.threads)
            assert sum(counting.reads.values()) == 2 * len(metaranges)
        finally:
            prefetch.close()
    finally:
        client.close()


def test_a_failed_read_ahead_is_read_again_when_asked(region_a, unique_name) -> None:
    client, source, metaranges = _history(region_a, unique_name, commits=3)
    try:
        counting = Counting(source, fail_first=True)
        prefetch = MetadataPrefetch(counting, metaranges, workers=2)
        try:
            for i, metarange_id in enumerate(metaranges):
                prefetch.advance(i)
                assert prefetch.read_metadata("meta_range", metarange_id) == source.read_metadata(
                    "meta_range", metarange_id
                )
            assert prefetch.hits == 0
            assert all(counting.reads[m] == 2 for m in metaranges)
        finally:
            prefetch.close()
    finally:
        client.close()
