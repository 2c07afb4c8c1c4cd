"""Two regions writing the mirrors database at once never corrupt it.

Two separate processes (spawned interpreters, like two regions' services) open the same fresh database
(SQLite, PostgreSQL or DynamoDB) at the same moment and then race, phase by phase, on: creating the same
mirror names, claiming the same storage namespaces, compare-and-set state changes, free-running state
updates, the validated-ranges cache, and branch records. Afterwards the parent checks every outcome
against what must be true.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import random
import traceback
from datetime import UTC, datetime
from typing import Any

from lakefs_mirror_dagster.config.database import MirrorsDatabaseConfig
from lakefs_mirror_dagster.mirrors import (
    ConcurrentUpdate,
    MirrorExists,
    MirrorState,
    NamespaceInUse,
    open_mirrors_database,
)

NAMES = 40
CAS_ROUNDS = 25
FREE_UPDATES = 60
RANGE_SPAN = 1500
RANGE_OVERLAP = 750
BRANCHES = 20
BARRIER_TIMEOUT_S = 90
RESULT_TIMEOUT_S = 240


def spec(name: str, namespace: str) -> dict[str, Any]:
    return {
        "organization_id": "acme",
        "source_region": "us-east-1",
        "source_repository": "sales",
        "name": name,
        "destination_region": "us-west-2",
        "storage_namespace": namespace,
    }


def worker_range_ids(worker: int) -> list[str]:
    start = worker * RANGE_OVERLAP
    return [f"{i:064x}" for i in range(start, start + RANGE_SPAN)]


def _worker(config: MirrorsDatabaseConfig, worker: int, barrier: Any, results: Any) -> None:
    """One region's process. Reports what it observed; never decides pass/fail itself."""
    out: dict[str, Any] = {"worker": worker, "error": None}
    try:
        barrier.wait(BARRIER_TIMEOUT_S)
        store = open_mirrors_database(config)  # both processes create the tables at the same moment

        # Phase 1: the same 40 names, and 40 namespaces claimed under different names.
        barrier.wait(BARRIER_TIMEOUT_S)
        won, lost = {}, []
        ns_won, ns_lost = [], []
        for i in range(NAMES):
            try:
                won[f"shared-{i}"] = store.create_mirror(**spec(f"shared-{i}", f"s3://b/shared-{i}")).id
            except MirrorExists:
                lost.append(f"shared-{i}")
            try:
                store.create_mirror(**spec(f"claim-w{worker}-{i}", f"s3://b/claimed-{i}"))
                ns_won.append(i)
            except NamespaceInUse:
                ns_lost.append(i)
        out.update(won=won, lost=lost, ns_won=ns_won, ns_lost=ns_lost)

        # Phase 2: both create the counter mirror; then lock-step CAS rounds from the same generation.
        barrier.wait(BARRIER_TIMEOUT_S)
        with contextlib.suppress(MirrorExists):
            store.create_mirror(**spec("counter", "s3://b/counter"))
        barrier.wait(BARRIER_TIMEOUT_S)
        rounds: list[tuple[str, int]] = []
        for r in range(CAS_ROUNDS):
            seen = store.get_by_name("us-west-2", "counter")
            barrier.wait(BARRIER_TIMEOUT_S)
            try:
                new = store.set_state(seen.id, MirrorState.ACTIVE, f"w{worker} r{r}", seen.generation)
                rounds.append(("won", new.generation))
            except ConcurrentUpdate:
                rounds.append(("lost", seen.generation))
            barrier.wait(BARRIER_TIMEOUT_S)
        out["rounds"] = rounds

        # Phase 3: free-running read-modify-write; every success reports the generation it created.
        barrier.wait(BARRIER_TIMEOUT_S)
        generations: list[int] = []
        conflicts = 0
        rng = random.Random(worker)
        range_ids = worker_range_ids(worker)
        rng.shuffle(range_ids)
        batches = [range_ids[i : i + 100] for i in range(0, len(range_ids), 100)]
        newly_marked = 0
        for _attempt in range(FREE_UPDATES * 50):
            if len(generations) == FREE_UPDATES:
                break
            seen = store.get_by_name("us-west-2", "counter")
            try:
                new = store.set_state(seen.id, MirrorState.ACTIVE, f"w{worker} free", seen.generation)
                generations.append(new.generation)
            except ConcurrentUpdate:
                conflicts += 1
            # Phase 3 also interleaves range-cache writes and branch upserts with the CAS traffic.
            if batches:
                newly_marked += store.mark_ranges_validated(
                    "us-west-2//s3://b/counter", dict.fromkeys(batches.pop(), "f")
                )
            branch = f"b-{rng.randrange(BRANCHES)}"
            store.record_branch(
                seen.id, branch, source_commit_id=f"w{worker}-{branch}", source_commit_time=datetime.now(UTC)
            )
        for batch in batches:
            newly_marked += store.mark_ranges_validated("us-west-2//s3://b/counter", dict.fromkeys(batch, "f"))
        for b in range(BRANCHES):  # make sure every branch was written by both workers at least once
            store.record_branch(seen.id, f"b-{b}", mirrored_commit_id=f"w{worker}-b-{b}")
        out.update(generations=generations, conflicts=conflicts, newly_marked=newly_marked)
        store.close()
    except BaseException:
        out["error"] = traceback.format_exc()
        barrier.abort()
    results.put(out)


def run_two_regions(config: MirrorsDatabaseConfig) -> list[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(config, w, barrier, results), daemon=True) for w in range(2)]
    for p in procs:
        p.start()
    reports: list[dict[str, Any]] = []
    try:
        for _ in procs:
            reports.append(results.get(timeout=RESULT_TIMEOUT_S))
    except queue.Empty:
        raise AssertionError(f"workers did not report within {RESULT_TIMEOUT_S}s; got {reports}") from None
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join(timeout=10)
    errors = [r["error"] for r in reports if r["error"]]
    assert not errors, "worker failed:\n" + "\n".join(errors)
    return sorted(reports, key=lambda r: r["worker"])


def test_two_processes_never_corrupt_the_database(db_config: MirrorsDatabaseConfig) -> None:
    reports = run_two_regions(db_config)
    store = open_mirrors_database(db_config, create_tables=False)
    try:
        mirrors = list(store.iter_mirrors(page_size=17))

        # Phase 1: every shared name has exactly one winner, and the row is the winner's.
        rows = {m.name: m for m in mirrors}
        assert len(rows) == len(mirrors), "duplicate mirror names slipped through"
        for i in range(NAMES):
            name = f"shared-{i}"
            winners = [r["won"][name] for r in reports if name in r["won"]]
            losers = [r for r in reports if name in r["lost"]]
            assert len(winners) == 1 and len(losers) == 1, name
            assert rows[name].id == winners[0]
        # Each namespace went to exactly one claimant; the other got NamespaceInUse.
        namespaces = [m.storage_namespace for m in mirrors]
        assert len(namespaces) == len(set(namespaces)), "two mirrors share a namespace"
        for i in range(NAMES):
            assert sorted([i in r["ns_won"] for r in reports]) == [False, True], i
            assert sorted([i in r["ns_lost"] for r in reports]) == [False, True], i
            claimants = [m for m in mirrors if m.storage_namespace == f"s3://b/claimed-{i}"]
            assert len(claimants) == 1
        assert len(mirrors) == 2 * NAMES + 1

        # Phase 2: in every lock-step round exactly one CAS won and the other got ConcurrentUpdate.
        for r in range(CAS_ROUNDS):
            outcomes = sorted(rep["rounds"][r][0] for rep in reports)
            assert outcomes == ["lost", "won"], f"round {r}: {outcomes}"
        won_generations = sorted(
            rep["rounds"][r][1] for rep in reports for r in range(CAS_ROUNDS) if rep["rounds"][r][0] == "won"
        )
        assert won_generations == list(range(2, 2 + CAS_ROUNDS))

        # Phase 3: no lost update: every success produced a distinct generation, with no gaps.
        counter = store.get_by_name("us-west-2", "counter")
        free = sorted(g for rep in reports for g in rep["generations"])
        assert all(len(rep["generations"]) == FREE_UPDATES for rep in reports)
        first_free = 2 + CAS_ROUNDS
        assert free == list(range(first_free, first_free + 2 * FREE_UPDATES))
        assert counter.generation == 1 + CAS_ROUNDS + 2 * FREE_UPDATES
        assert counter.state is MirrorState.ACTIVE and counter.message.endswith("free")

        # Validated ranges: the union, each id inserted by exactly one of the two processes.
        union = set(worker_range_ids(0)) | set(worker_range_ids(1))
        assert store.validated_count("us-west-2//s3://b/counter") == len(union)
        assert store.validated_ranges("us-west-2//s3://b/counter", union) == dict.fromkeys(union, "f")
        assert sum(rep["newly_marked"] for rep in reports) == len(union)

        # Branch records: one row per branch, each field written whole by one worker.
        branches = store.get_branches(counter.id)
        assert [b.branch for b in branches] == sorted(f"b-{i}" for i in range(BRANCHES))
        for b in branches:
            assert b.mirrored_commit_id in (f"w0-{b.branch}", f"w1-{b.branch}")
            assert b.source_commit_id in (None, f"w0-{b.branch}", f"w1-{b.branch}")

        for m in mirrors:  # every row is a well-formed mirror
            assert m.generation >= 1 and m.created_at <= m.updated_at
            assert m.state in set(MirrorState)
    finally:
        store.close()
