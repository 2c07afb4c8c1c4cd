"""Reading a history's metadata files ahead, several commits at once, so a first sync does not pay a round trip
per file one commit after another.

A ref's missing commits are worked on in order (parents first): each commit's metarange, then the ranges it adds,
then its objects, validation. Over a link of 80 ms, reading those files one after another costs a few round trips
per commit whatever else is done. ``MetadataPrefetch`` reads the metaranges of the next ``window`` commits on
``workers`` threads, and with each the few range files that are new in it compared with the commit before it
(the ones the pass will read: a one-object commit rewrites one range), while the pass works on earlier commits.

With ``copy_ahead`` (the engine's, in copy mode on its own pool) each range read ahead also has the objects it
adds over the commit before copied to the destination; the pass waits for that before working on the range and
finds them present. Objects only: range files, metaranges, validation and ref moves stay the pass's, in order.

Nothing here decides anything: the bytes are handed to the same code that read them before, which verifies them
against their IDs as it always did. A prefetch that failed is simply read again when asked for, so a fault in a
read ahead surfaces exactly as a fault in the read it replaces. Memory stays bounded: at most ``window`` commits
ahead, at most ``max_ranges`` ranges each, nothing read ahead once ``max_bytes`` are held, and files (and a
metarange's decoded ranges, which the pass and the next commit's read ahead use instead of decoding it again) are
dropped once the pass is ``keep`` commits past them.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

from ..graveler import Metarange, RangeRef, decode_metarange
from ..storage import Blockstore, ObjectStat
from .range_transfer import RangeSource

__all__ = ["CopyAhead", "MetadataPrefetch"]

log = logging.getLogger(__name__)

#: ``copy_ahead(index, range_id, data, base_range_ids, read_metadata)``: copy the range's new objects (compared
#: with its bases, read through ``read_metadata``) to the destination; returns the objects and bytes copied, and
#: the stat of each object that arrived by destination URI.
CopyAhead = Callable[[int, str, bytes, list[str], Callable[[str, str], bytes]], tuple[int, int, dict[str, ObjectStat]]]


def _overlap(a: RangeRef, b: RangeRef) -> bool:
    return a.min_key <= b.max_key and b.min_key <= a.max_key


def _overlapping(candidates: Iterable[RangeRef], ref: RangeRef) -> list[RangeRef]:
    return [c for c in candidates if _overlap(c, ref)]


class MetadataPrefetch:
    """A ``RangeSource`` over ``source`` whose metadata files of ``metaranges`` (in the order the pass works on
    them) are read ahead; call ``advance(i)`` as the pass reaches metarange ``i``. Thread-safe; ``close`` it."""

    def __init__(
        self,
        source: RangeSource,
        metaranges: Sequence[str],
        *,
        before: Mapping[str, Metarange] | Future[dict[str, Metarange]] | None = None,
        window: int = 16,
        keep: int = 2,
        workers: int = 8,
        max_ranges: int = 2,
        max_bytes: int = 64 << 20,
        copy_ahead: CopyAhead | None = None,
    ) -> None:
        self.source = source
        self.metaranges = list(metaranges)
        self.window = window
        #: Files are dropped once the pass is ``keep`` metaranges past them (writers still at work on them wait
        #: for their copies ahead until then).
        self.keep = keep
        self.max_ranges = max_ranges
        self.max_bytes = max_bytes
        self._before = before  # the ranges before the first metarange by metarange (or their read, on its way)
        self.copy_ahead = copy_ahead
        #: Range ID -> (objects, bytes) ``copy_ahead`` copied for it; the pass folds them into its ref's stats.
        self.copied_ahead: dict[str, tuple[int, int]] = {}
        #: Range ID -> the objects ``copy_ahead`` stored for it, by destination URI (``SyncingRef.present``).
        self.present_ahead: dict[str, dict[str, ObjectStat]] = {}
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="metadata-prefetch")
        self._lock = threading.Lock()
        self._files: dict[tuple[str, str], Future[bytes]] = {}
        self._raw: dict[str, Future[bytes]] = {}  # a range's bytes once read (before its copy ahead)
        self._refs: dict[str, tuple[bytes, Metarange]] = {}  # a metarange's bytes read ahead, decoded
        self._new: dict[str, list[RangeRef]] = {}  # the ranges each lists that the metarange before it does not
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
            for old in [i for i in self._owner if i <= index - self.keep]:
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

    def metarange(self, metarange_id: str, data: bytes) -> Metarange | None:
        """``metarange_id`` decoded when ``data`` are the very bytes read ahead (which hashed to the ID when
        decoded here), so the pass does not decode them again; else None."""
        with self._lock:
            kept = self._refs.get(metarange_id)
        return kept[1] if kept is not None and kept[0] is data else None

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        return self.source.object_location(commit_id, key, address)

    def holds(self, kind: str, file_id: str) -> bool:
        """Whether a read of this file was started ahead (``read_metadata`` then waits for it, not for a new one)."""
        with self._lock:
            return (kind, file_id) in self._files

    def early(self, range_id: str) -> bytes | None:
        """A range file's bytes read ahead, as soon as read (before its copy ahead is done); None when no read of
        it was started or it failed."""
        with self._lock:
            raw = self._raw.get(range_id)
        try:
            return raw.result() if raw is not None else None
        except Exception:  # read again by whoever asks for it, and reported there
            return None

    def settle(self, range_id: str) -> None:
        """Wait until the read ahead of this range and its copy ahead are done, if they were started (whether
        they failed or not: the pass reads and copies whatever they did not)."""
        with self._lock:
            future = self._files.get(("range", range_id))
        if future is not None:
            wait([future])

    def new_ranges(self) -> dict[str, list[RangeRef]]:
        """For every metarange read ahead and decoded so far (without waiting for any), the ranges it lists that
        the metarange before it does not."""
        with self._lock:
            return dict(self._new)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._files.clear()
            self._raw.clear()
            self._refs.clear()
            self._new.clear()
            self._owner.clear()
            self._held = 0
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ the readers' side
    def _read_metarange(self, j: int) -> bytes:
        metarange_id = self.metaranges[j]
        data = self.source.read_metadata("meta_range", metarange_id)
        self._count(len(data))
        previous = self._previous(j)
        like = previous if isinstance(previous, Metarange) else None
        metarange = decode_metarange(data, metarange_id, like=like)
        if like is not None:
            new = metarange.changed_from(like)
            overlapping = like.overlapping
        else:
            before = previous if isinstance(previous, dict) else {}
            new = [r for r in metarange.refs if r.range_id not in before]
            overlapping = functools.partial(_overlapping, before.values())
        with self._lock:
            if not self._closed:
                self._refs[metarange_id] = (data, metarange)
                self._new[metarange_id] = new
        if len(new) <= self.max_ranges:  # a big change: the pass's own read-ahead paces those reads
            for ref in new:
                bases = [p.range_id for p in overlapping(ref)]
                self._start_range(j, ref.range_id, bases)
        return data

    def _previous(self, j: int) -> Metarange | dict[str, RangeRef] | None:
        """The metarange before ``j`` decoded (read by an earlier task, which a FIFO pool started first, so
        waiting for it cannot deadlock); before the first, the ranges of the metaranges before it by ID."""
        if j == 0:
            try:
                before = self._before.result() if isinstance(self._before, Future) else self._before
            except Exception:  # the pass reads them itself and reports its error
                return {}
            return {r.range_id: r for metarange in (before or {}).values() for r in metarange.refs}
        previous_id = self.metaranges[j - 1]
        with self._lock:
            future = self._files.get(("meta_range", previous_id))
        if future is None:
            return None
        try:
            data = future.result()
            return self.metarange(previous_id, data) or decode_metarange(data, previous_id)
        except Exception:
            return None

    def _start_range(self, j: int, range_id: str, bases: list[str]) -> None:
        key = ("range", range_id)
        with self._lock:
            if self._closed or key in self._files or self._held >= self.max_bytes:
                return
            self._raw[range_id] = Future()
            self._files[key] = self._pool.submit(self._read_range, j, range_id, bases)
            self._owner.setdefault(j, []).append(key)

    def _read_range(self, j: int, range_id: str, bases: list[str]) -> bytes:
        """The range's bytes; with ``copy_ahead``, once its new objects were copied (so the pass, which waits
        for these bytes, then finds them at the destination instead of racing for them)."""
        raw = self._raw.get(range_id)
        try:
            data = self.source.read_metadata("range", range_id)
        except BaseException as exc:
            if raw is not None:
                raw.set_exception(exc)
            raise
        if raw is not None:
            raw.set_result(data)
        self._count(len(data))
        if self.copy_ahead is not None and not self._closed:
            try:
                copied, nbytes, present = self.copy_ahead(j, range_id, data, bases, self._read_base)
            except Exception as exc:  # only ahead of time: the pass copies what is missing and validates all
                log.debug("copying range %s ahead: %s", range_id, exc)
            else:
                with self._lock:
                    self.copied_ahead[range_id] = (copied, nbytes)
                    self.present_ahead[range_id] = present
        return data

    def _read_base(self, kind: str, range_id: str) -> bytes:
        """A base range's bytes for ``copy_ahead``: as soon as its read ahead has them (not once its own copy
        ahead is done, so copies ahead of consecutive commits overlap), else read now."""
        with self._lock:
            raw = self._raw.get(range_id)
        return raw.result() if raw is not None else self.source.read_metadata(kind, range_id)

    def _count(self, n: int) -> None:
        with self._lock:
            self._held += n

    def _drop(self, key: tuple[str, str]) -> None:
        self._raw.pop(key[1], None)
        self._refs.pop(key[1], None)
        self._new.pop(key[1], None)
        future = self._files.pop(key, None)
        if future is not None and future.done() and future.exception() is None:
            self._held -= len(future.result())
        elif future is not None:
            future.cancel()
