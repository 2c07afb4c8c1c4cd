"""Which of many objects a store holds: one LIST per dense directory instead of one HEAD per object.

lakeFS writes objects under ``<namespace>/data/<partition>/<object>``, a partition holding up to 50,000
objects, so the objects of a range share a few directories. A listed object costs about a twelfth of a
HEAD (MinIO on loopback, boto3: 0.12 ms vs 1.4 ms of CPU), and a listing of a directory with none of
them (a new mirror) costs one request. A listing is only started for a directory holding at least
``min_per_directory`` of the wanted objects, and stops after ``overscan`` times as many listed objects, so
a huge directory holding few of them costs a bounded fraction of the HEADs it was meant to save.

A listing covers only the span of names wanted: it starts just before the first (``start_after``) and stops
after the last. lakeFS names uploads in the order they were made, so the ranges of one commit, each validated
on its own, mostly want disjoint spans of a shared directory: each lists its own span, not the whole directory
(three ranges of one 50,000-object directory listed 150,000 names, now 50,000). Only what a listing shows
counts as present; a name in the span it did not show is absent. MinIO walks a directory from where a listing
starts to its end whatever the client reads, so a listing started mid-directory still costs MinIO the rest of
it. Two ways were tried and measured worse at 200,000 objects (``benchmarks/validation_rate.py``): one listing
per directory shared by the ranges of a batch (no MinIO CPU saved, and the ranges waited for each other's
listings), and each range's span listed in four parts at once (MinIO CPU 12.4 s against 7.1 s).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .base import Blockstore, ObjectStat

__all__ = ["MIN_PER_DIRECTORY", "OVERSCAN", "listed_stats"]

#: Fewest wanted objects in one directory for a listing to pay: a full page of 1,000 costs about 80 HEADs.
MIN_PER_DIRECTORY = 100
#: A listing stops after this many listed objects per wanted object of its directory.
OVERSCAN = 10


def listed_stats(
    store: Blockstore,
    uris: Iterable[str],
    *,
    min_per_directory: int = MIN_PER_DIRECTORY,
    overscan: int = OVERSCAN,
) -> dict[str, ObjectStat | None]:
    """The stats of those ``uris`` that listings settle: an ObjectStat (size and ETag) for each one listed,
    None for each one absent from a directory listed across the span of names wanted from it. URIs not in
    the result are unsettled and need a HEAD (``store.stat``). Local files listed this way carry no change
    token (``version``)."""
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
        budget = overscan * len(wanted)
        first, last = min(wanted), max(wanted)
        complete = True
        # first[:-1] sorts just before first (a prefix of it, not shorter than the directory)
        for listed, info in enumerate(store.list_prefix(directory, start_after=first[:-1])):
            if info.uri > last:
                break
            if listed >= budget:
                complete = False
                break
            if info.uri in wanted:
                settled[info.uri] = ObjectStat(size=info.size, etag=info.etag)
        if complete:
            settled.update((uri, None) for uri in wanted if uri not in settled)
    return settled
