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
it; one listing per directory shared by the ranges of a batch was tried and saved no MinIO CPU at 200,000
objects while the ranges waited for each other's listings (``benchmarks/validation_rate.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from .base import Blockstore, ObjectStat

__all__ = ["MAX_SPANS", "MIN_PER_DIRECTORY", "OVERSCAN", "SPAN_OBJECTS", "listed_stats"]

#: Fewest wanted objects in one directory for a listing to pay: a full page of 1,000 costs about 80 HEADs.
MIN_PER_DIRECTORY = 100
#: A listing stops after this many listed objects per wanted object of its directory.
OVERSCAN = 10
#: Wanted objects per listing: more in one directory are listed in several spans at once (at most
#: ``MAX_SPANS``), each from just before its first name to its last. One listing is served a page at a
#: time; 200,000 objects listed in 4 spans at once took 4.0 s against 13.4 s in one, at the same MinIO CPU.
SPAN_OBJECTS = 5_000
MAX_SPANS = 4


def _just_before(uri: str) -> str:
    """A URI sorting before ``uri`` and after as few others as it can: its last letter or digit one lower
    (``o0036`` -> ``o0035``: only names extending that one lie between), else ``uri`` less its last character
    (a prefix: its siblings lie between). Never a character S3 or obstore would treat specially."""
    last = uri[-1]
    if last in "123456789" or "B" <= last <= "Z" or "b" <= last <= "z":
        return uri[:-1] + chr(ord(last) - 1)
    return uri[:-1]


def _settle_span(store: Blockstore, directory: str, wanted: list[str], overscan: int) -> dict[str, ObjectStat | None]:
    """List ``directory`` from just before ``wanted[0]`` (sorted; ``_just_before``) to ``wanted[-1]``, or
    until ``overscan`` names per wanted one were listed; what a listing that got to the end of the span did
    not show is absent."""
    first, last, budget, names = wanted[0], wanted[-1], overscan * len(wanted), set(wanted)
    settled: dict[str, ObjectStat | None] = {}
    complete = True
    # sorts before first, and not before the directory (the name after it is not empty)
    for listed, info in enumerate(store.list_prefix(directory, start_after=_just_before(first))):
        if info.uri > last:
            break
        if listed >= budget:
            complete = False
            break
        if info.uri in names:
            settled[info.uri] = ObjectStat(size=info.size, etag=info.etag)
    if complete:
        settled.update((uri, None) for uri in wanted if uri not in settled)
    return settled


def listed_stats(
    store: Blockstore,
    uris: Iterable[str],
    *,
    min_per_directory: int = MIN_PER_DIRECTORY,
    overscan: int = OVERSCAN,
    span_objects: int = SPAN_OBJECTS,
) -> dict[str, ObjectStat | None]:
    """The stats of those ``uris`` that listings settle: an ObjectStat (size and ETag) for each one listed,
    None for each one absent from a directory listed across the span of names wanted from it. URIs not in
    the result are unsettled and need a HEAD (``store.stat``). Local files listed this way carry no change
    token (``version``). A directory with more than ``span_objects`` wanted is listed in spans at once."""
    if min_per_directory < 1 or overscan < 1 or span_objects < 1:
        raise ValueError("min_per_directory, overscan and span_objects must be at least 1")
    directories: defaultdict[str, set[str]] = defaultdict(set)
    for uri in uris:
        directory, slash, name = uri.rpartition("/")
        if slash and name:
            directories[directory + "/"].add(uri)
    spans: list[tuple[str, list[str]]] = []
    for directory, wanted in directories.items():
        if len(wanted) < min_per_directory:
            continue
        names = sorted(wanted)
        count = max(1, min(MAX_SPANS, len(names) // span_objects))
        size = -(-len(names) // count)
        spans.extend((directory, names[start : start + size]) for start in range(0, len(names), size))
    settled: dict[str, ObjectStat | None] = {}
    if len(spans) <= 1:
        for directory, names in spans:
            settled.update(_settle_span(store, directory, names, overscan))
        return settled
    with ThreadPoolExecutor(max_workers=min(len(spans), MAX_SPANS), thread_name_prefix="list") as pool:
        for part in pool.map(lambda span: _settle_span(store, span[0], span[1], overscan), spans):
            settled.update(part)
    return settled
