"""How a pass spreads its branches over threads: leaders of each source head first, results in name order."""

from __future__ import annotations

import threading
import time

from lakefs_mirror_dagster.replication import RefAction, RefKind, RefResult
from lakefs_mirror_dagster.replication.branch_workers import sync_branches


def test_branches_sharing_a_head_wait_for_one_of_them_and_results_keep_name_order() -> None:
    heads = {"a": ("H1", None), "b": ("H1", None), "c": ("H2", None), "d": ("H1", None), "e": ("H2", None)}
    started: list[str] = []
    active, peak = 0, 0
    lock = threading.Lock()

    def sync(kind: RefKind, name: str, source: str | None, mirror: str | None) -> RefResult:
        nonlocal active, peak
        with lock:
            started.append(name)
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return RefResult(
            kind=kind,
            name=name,
            action=RefAction.CREATED,
            source_commit=source,
            mirror_commit_before=mirror,
            mirror_commit=source,
        )

    results = sync_branches(heads, sync, None, limit=2)

    assert [r.name for r in results] == ["a", "b", "c", "d", "e"]
    assert set(started[:2]) == {"a", "c"}  # one branch per source head, before any branch that shares it
    assert peak == 2


def test_a_gate_holds_branches_without_syncing_them() -> None:
    heads = {"held": ("H1", "H0"), "free": ("H1", "H0")}
    synced: list[str] = []

    def sync(kind: RefKind, name: str, source: str | None, mirror: str | None) -> RefResult:
        synced.append(name)
        return RefResult(
            kind=kind,
            name=name,
            action=RefAction.ADVANCED,
            source_commit=source,
            mirror_commit_before=mirror,
            mirror_commit=source,
        )

    def gate(kind: RefKind, name: str, source: str | None, mirror: str | None) -> RefResult | None:
        if name != "held":
            return None
        return RefResult(
            kind=kind,
            name=name,
            action=RefAction.DEFERRED,
            source_commit=source,
            mirror_commit_before=mirror,
            mirror_commit=mirror,
        )

    results = sync_branches(heads, sync, gate, limit=4)
    assert [(r.name, r.action) for r in results] == [("held", RefAction.DEFERRED), ("free", RefAction.ADVANCED)]
    assert synced == ["free"]


def test_the_newest_branch_goes_alone_before_the_others() -> None:
    """In a shared history the branch at the newest head is synced by itself first; the others then find
    the history at the mirror instead of every thread working on it at once."""
    heads = {"a": ("H1", None), "b": ("H2", None), "main": ("H3", None), "c": ("H1", None)}
    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def sync(kind: RefKind, name: str, source: str | None, mirror: str | None) -> RefResult:
        with lock:
            events.append(("start", name))
        time.sleep(0.02)
        with lock:
            events.append(("end", name))
        return RefResult(kind, name, source, mirror, source, action=RefAction.CREATED)

    results = sync_branches(heads, sync, None, limit=4, alone="main")
    assert [r.name for r in results] == ["a", "b", "main", "c"]
    assert events[:2] == [("start", "main"), ("end", "main")]
    assert sorted(n for e, n in events if e == "start") == ["a", "b", "c", "main"]
