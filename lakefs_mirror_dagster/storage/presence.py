"""Which of many objects a store holds: one LIST per dense directory instead of one HEAD per object.

lakeFS writes objects under ``<namespace>/data/<partition>/<object>``, a partition holding up to 50,000
objects, so the objects of a range share a few directories. A listed object costs about a twelfth of a
HEAD (MinIO on loopback, boto3: 0.12 ms vs 1.4 ms of CPU), and a listing of a directory with none of
them (a new mirror) costs one request. A listing is only started for a directory holding at least
``min_per_directory`` of the wanted objects, and stops after ``overscan`` times as many listed objects, so
a huge directory holding few of them costs a bounded fraction of the HEADs it was meant to save.

A listing covers only the span of names wanted: it starts just before the first (``start_after``) and stops
after the last. lakeFS names uploads in the order they were made, so the ranges of one commit mostly want
disjoint spans of a shared directory. MinIO, though, walks a directory from where a listing starts to its end
(it reads every object's metadata into its listing cache) even when the client stops early, so a listing
started in each range's span still costs the rest of the directory each time. ``DirectoryListings`` shares
one listing per directory among the ranges of a batch (the threads of the in-process validator, the ranges of
one Spark task): the first range lists from its span on to the directory's end (within its budget), and
later ranges whose spans that listing covered take their answers from it. Only what a listing shows counts
as present; a name in a span it covered and did not show is absent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .base import Blockstore, ObjectStat

__all__ = ["MIN_PER_DIRECTORY", "OVERSCAN", "DirectoryListings", "listed_stats"]

#: Fewest wanted objects in one directory for a listing to pay: a full page of 1,000 costs about 80 HEADs.
MIN_PER_DIRECTORY = 100
#: A listing stops after this many listed objects per wanted object of its directory.
OVERSCAN = 10
#: Directories whose listings a ``DirectoryListings`` keeps (the last used): about 12 MB per 50,000 names.
KEPT_DIRECTORIES = 4


@dataclass
class _Window:
    """What one listing of a directory showed: every name after ``after`` up to ``end`` (None: to the end)."""

    after: str
    end: str | None
    stats: dict[str, ObjectStat] = field(default_factory=dict)

    def covers(self, first: str, last: str) -> bool:
        return self.after < first and (self.end is None or last <= self.end)


def _list_window(
    store: Blockstore, directory: str, first: str, last: str, budget: int, keep: set[str] | None
) -> _Window:
    """List ``directory`` from just before ``first`` (``first[:-1]``: a prefix of it, not shorter than the
    directory) until ``budget`` names were listed, or until past ``last`` when only the names in ``keep`` are
    kept; ``keep`` None keeps every name and reads on to the end of the directory (for the ranges after)."""
    window = _Window(after=first[:-1], end=None)
    previous = window.after
    for listed, info in enumerate(store.list_prefix(directory, start_after=window.after)):
        if keep is not None and info.uri > last:
            window.end = last
            break
        if listed >= budget:
            window.end = previous
            break
        if keep is None or info.uri in keep:
            window.stats[info.uri] = ObjectStat(size=info.size, etag=info.etag)
        previous = info.uri
    return window


class DirectoryListings:
    """Listings shared by the validations of one batch, from any thread (see the module doc). Keeps the
    listings of the ``capacity`` directories used last; ``listings`` counts the listings started."""

    def __init__(self, capacity: int = KEPT_DIRECTORIES) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.listings = 0
        self._lock = threading.Lock()
        self._windows: OrderedDict[str, _Window] = OrderedDict()
        self._directory_locks: dict[str, threading.Lock] = {}

    def window(self, store: Blockstore, directory: str, first: str, last: str, budget: int) -> _Window:
        """A listing of ``directory`` covering ``first``..``last`` if one in hand does, else a new one."""
        with self._lock:
            directory_lock = self._directory_locks.setdefault(directory, threading.Lock())
        with directory_lock:  # a second range waits for the listing under way instead of starting its own
            with self._lock:
                window = self._windows.get(directory)
                if window is not None:
                    self._windows.move_to_end(directory)
            if window is not None and window.covers(first, last):
                return window
            window = _list_window(store, directory, first, last, budget, keep=None)
            with self._lock:
                self.listings += 1
                self._windows[directory] = window
                self._windows.move_to_end(directory)
                while len(self._windows) > self.capacity:
                    self._windows.popitem(last=False)
            return window


def listed_stats(
    store: Blockstore,
    uris: Iterable[str],
    *,
    min_per_directory: int = MIN_PER_DIRECTORY,
    overscan: int = OVERSCAN,
    listings: DirectoryListings | None = None,
) -> dict[str, ObjectStat | None]:
    """The stats of those ``uris`` that listings settle: an ObjectStat (size and ETag) for each one listed,
    None for each one absent from a directory listed across the span of names wanted from it. URIs not in
    the result are unsettled and need a HEAD (``store.stat``). Local files listed this way carry no change
    token (``version``). ``listings``: share listings with the other calls of a batch."""
    if min_per_directory < 1 or overscan < 1:
        raise ValueError("min_per_directory and overscan must be at least 1")
    directories: defaultdict[str, set[str]] = defaultdict(set)
    for uri in uris:
        directory, slash, name = uri.rpartition("/")
        if slash and name:
            directories[directory + "/"].add(uri)
    settled: dict[str, ObjectStat | None] = {}
    for directory, wanted in directories.items():
        if len(wanted) < min_per_directory:
            continue
        first, last, budget = min(wanted), max(wanted), overscan * len(wanted)
        if listings is None:
            window = _list_window(store, directory, first, last, budget, keep=wanted)
        else:
            window = listings.window(store, directory, first, last, budget)
        if window.covers(first, last):
            settled.update((uri, window.stats.get(uri)) for uri in wanted)
        else:  # the listing stopped at its budget: what it did not reach stays unsettled
            settled.update((uri, window.stats[uri]) for uri in wanted if uri in window.stats)
    return settled
