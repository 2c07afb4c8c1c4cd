"""Which of many objects a store holds: one LIST per dense directory instead of one HEAD per object.

lakeFS writes a range's objects into a few ``data/<partition>/`` directories, and a listed object costs a small
fraction of a HEAD (benchmarks/README.md, "Listing instead of HEADs"). A directory is listed only when it holds
at least ``min_per_directory`` wanted objects, and only across the span of names wanted (lakeFS names uploads in
order, so the ranges of a commit want mostly disjoint spans); ``overscan`` bounds what a listing may cost. Only
what a listing shows is present. Alternatives tried and measured worse: ``validation_rate.py`` (README row).
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
