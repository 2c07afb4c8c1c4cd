"""The branches of one mirror pass synced on up to ``commit_sensor.branches_scanner_concurrency_limit`` threads.

Each branch is independent (its own plan, transfer, validation and compare-and-set ref move), and every write
is idempotent, so two branches sharing new commits at worst copy the same file or create the same commit
record twice. What they do share is the mirrors database, reached through the validated-files cache and the
ref recorder; an in-memory SQLite database is one connection, so those calls are made one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .plugs import RefGate, RefRecorder, ValidatedCache
from .results import RefKind, RefResult

__all__ = ["SerializedCache", "bounded_map", "serialized", "sync_branches"]

Heads = Mapping[str, tuple[str | None, str | None]]
SyncRef = Callable[[RefKind, str, str | None, str | None], RefResult]

T = TypeVar("T")
R = TypeVar("R")


def bounded_map(fn: Callable[[T], R], items: Sequence[T], limit: int) -> list[R]:
    """``fn`` over ``items`` on at most ``limit`` threads, results in the order of ``items``; the first error
    raised by ``fn`` is raised here once the others have finished."""
    if limit <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix="branch-sync") as pool:
        return list(pool.map(fn, items))


def sync_branches(
    heads: Heads, sync: SyncRef, gate: RefGate | None, limit: int, *, alone: str | None = None
) -> list[RefResult]:
    """Each branch (name -> source and mirror heads) asked of ``gate`` first, one after another (it reads the
    mirrors database), then the ones it does not hold synced on up to ``limit`` threads; results in name order.

    Branches at the same source head go in two waves: one of them first (it copies and records that commit),
    then the others, which find it at the mirror. A new mirror of a repository whose branches mostly share a
    few commits thus copies each commit once, not once per thread. ``alone`` (the branch whose head is the
    newest: in a shared history, most likely everyone's descendant) goes before all of them, by itself: the
    history the others share is then worked on once, not by every thread at once."""
    held = {name: gate(RefKind.BRANCH, name, *h) if gate is not None else None for name, h in heads.items()}

    def one(name: str) -> RefResult:
        return held[name] or sync(RefKind.BRANCH, name, *heads[name])

    done: dict[str, RefResult] = {}
    if alone is not None and alone in heads:
        done[alone] = one(alone)
    leaders: dict[str | None, str] = {}
    for name, (source_head, _mirror_head) in heads.items():
        if name not in done:
            leaders.setdefault(source_head, name)
    first = list(leaders.values())
    rest = [name for name in heads if name not in leaders.values() and name not in done]
    done.update(zip(first, bounded_map(one, first, limit), strict=True))
    done.update(zip(rest, bounded_map(one, rest, limit), strict=True))
    return [done[name] for name in heads]


def serialized(
    cache: ValidatedCache, recorder: RefRecorder | None, lock: threading.Lock
) -> tuple[ValidatedCache, RefRecorder | None]:
    """``cache`` and ``recorder`` sharing ``lock``, so the branch workers' database calls never overlap."""
    return SerializedCache(cache, lock), serialized_recorder(recorder, lock)


class SerializedCache:
    """A ``ValidatedCache`` whose calls never overlap (they share ``lock`` with the recorder)."""

    def __init__(self, cache: ValidatedCache, lock: threading.Lock) -> None:
        self._cache, self._lock = cache, lock

    def validated_ranges(self, namespace: str, range_ids: Iterable[str]) -> Mapping[str, str]:
        with self._lock:
            return self._cache.validated_ranges(namespace, list(range_ids))

    def mark_ranges_validated(self, namespace: str, fingerprints: Mapping[str, str]) -> int:
        with self._lock:
            return self._cache.mark_ranges_validated(namespace, fingerprints)

    def forget_validated(self, namespace: str, range_ids: Iterable[str] | None = None) -> int:
        with self._lock:
            return self._cache.forget_validated(namespace, None if range_ids is None else list(range_ids))


def serialized_recorder(recorder: RefRecorder | None, lock: threading.Lock) -> RefRecorder | None:
    """``recorder`` called under ``lock`` (None stays None)."""
    if recorder is None:
        return None

    def record(result: RefResult) -> None:
        with lock:
            recorder(result)

    return record
