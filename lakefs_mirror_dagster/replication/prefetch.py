"""Reading a history's metadata files ahead, several commits at once, so a first sync does not pay a round trip
per file one commit after another.

A ref's missing commits are worked on in order (parents first): each commit's metarange, then the ranges it adds,
then its objects, validation. Over a link of 80 ms, reading those files one after another costs a few round trips
per commit whatever else is done. ``MetadataPrefetch`` reads the metaranges of the next ``window`` commits on
``workers`` threads, and with each the few range files that are new in it compared with the commit before it
(the ones the pass will read: a one-object commit rewrites one range), while the pass works on earlier commits.

Nothing here decides anything: the bytes are handed to the same code that read them before, which verifies them
against their IDs as it always did. A prefetch that failed is simply read again when asked for, so a fault in a
read ahead surfaces exactly as a fault in the read it replaces. Memory stays bounded: at most ``window`` commits
ahead, at most ``max_ranges`` ranges each, nothing read ahead once ``max_bytes`` are held, and files are dropped
once the pass is two commits past them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from ..graveler import iter_range_refs, verify_range_file
from ..storage import Blockstore
from .range_transfer import RangeSource

__all__ = ["MetadataPrefetch"]


class MetadataPrefetch:
    """A ``RangeSource`` over ``source`` whose metadata files of ``metaranges`` (in the order the pass works on
    them) are read ahead; call ``advance(i)`` as the pass reaches metarange ``i``. Thread-safe; ``close`` it."""

    def __init__(
        self,
        source: RangeSource,
        metaranges: Sequence[str],
        *,
        before: Sequence[str] = (),
        window: int = 16,
        workers: int = 8,
        max_ranges: int = 2,
        max_bytes: int = 64 << 20,
    ) -> None:
        self.source = source
        self.metaranges = list(metaranges)
        self.window = window
        self.max_ranges = max_ranges
        self.max_bytes = max_bytes
        self._before = set(before)  # range IDs of the commit(s) before the first: not new in it
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="metadata-prefetch")
        self._lock = threading.Lock()
        self._files: dict[tuple[str, str], Future[bytes]] = {}
        self._owner: dict[int, list[tuple[str, str]]] = {}
        self._held = 0
        self._submitted = 0
        self._closed = False
        self.hits = 0

    # ------------------------------------------------------------------ the pass's side
    def advance(self, index: int) -> None:
        """The pass is at metarange ``index``: read ahead up to ``index + window``, drop what is behind it."""
        with self._lock:
            if self._closed:
                return
            for old in [i for i in self._owner if i < index - 1]:
                for key in self._owner.pop(old):
                    self._drop(key)
            while self._submitted < min(len(self.metaranges), index + 1 + self.window):
                j = self._submitted
                self._submitted += 1
                key = ("meta_range", self.metaranges[j])
                if key not in self._files:
                    self._files[key] = self._pool.submit(self._read_metarange, j)
                    self._owner.setdefault(j, []).append(key)

    def read_metadata(self, kind: str, file_id: str) -> bytes:
        """The bytes read ahead (kept for the commit after, whose base they are), else a read now."""
        with self._lock:
            future = self._files.get((kind, file_id))
        if future is not None:
            try:
                data = future.result()
            except Exception:  # a failed read ahead is read again here, and fails (or not) as that read does
                pass
            else:
                self.hits += 1
                return data
        return self.source.read_metadata(kind, file_id)

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        return self.source.object_location(commit_id, key, address)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._files.clear()
            self._owner.clear()
            self._held = 0
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ the readers' side
    def _read_metarange(self, j: int) -> bytes:
        metarange_id = self.metaranges[j]
        data = self.source.read_metadata("meta_range", metarange_id)
        self._count(len(data))
        ranges = [r.range_id for r in iter_range_refs(verify_range_file(data, metarange_id))]
        previous = self._previous_ranges(j)
        new = [r for r in ranges if r not in previous]
        if len(new) <= self.max_ranges:  # a big change: the pass's own read-ahead paces those reads
            for range_id in new:
                self._start_range(j, range_id)
        return data

    def _previous_ranges(self, j: int) -> set[str]:
        """The range IDs of the metarange before ``j`` (read by an earlier task, which a FIFO pool started
        first, so waiting for it cannot deadlock)."""
        if j == 0:
            return self._before
        with self._lock:
            future = self._files.get(("meta_range", self.metaranges[j - 1]))
        if future is None:
            return set()
        try:
            data = future.result()
            return {r.range_id for r in iter_range_refs(verify_range_file(data, self.metaranges[j - 1]))}
        except Exception:
            return set()

    def _start_range(self, j: int, range_id: str) -> None:
        key = ("range", range_id)
        with self._lock:
            if self._closed or key in self._files or self._held >= self.max_bytes:
                return
            self._files[key] = self._pool.submit(self._read_range, range_id)
            self._owner.setdefault(j, []).append(key)

    def _read_range(self, range_id: str) -> bytes:
        data = self.source.read_metadata("range", range_id)
        self._count(len(data))
        return data

    def _count(self, n: int) -> None:
        with self._lock:
            self._held += n

    def _drop(self, key: tuple[str, str]) -> None:
        future = self._files.pop(key, None)
        if future is not None and future.done() and future.exception() is None:
            self._held -= len(future.result())
        elif future is not None:
            future.cancel()
