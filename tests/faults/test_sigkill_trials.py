"""SIGKILL trials: a sync killed at random moments and at every named write step never exposes a partial commit.

Each trial changes the source (commits with new, overwritten and deleted objects; branches and tags created,
moved and deleted; merges), runs ``lakefs-mirror sync --once`` in a subprocess and kills it: with SIGKILL
after a random delay, or at a failpoint (``LAKEFS_MIRROR_FAILPOINT=name:n``, an ``os._exit`` like SIGKILL).
After every trial the invariant of ``invariant.MirrorChecker`` is checked against the source byte for byte;
after the last one, an undisturbed sync must make the mirror equal to the source.

    pytest tests/faults/test_sigkill_trials.py -s          # CI form: 50 trials, 1-4 minutes
    LAKEFS_MIRROR_FAULT_TRIALS=500 pytest tests/faults/test_sigkill_trials.py -s    # long form (~12 min quiet)
    LAKEFS_MIRROR_FAULT_SEED=<seed> ...                     # replay the random choices of a printed seed

The seed (printed, and named in every violation) fixes the workload, the kill delays and the failpoints;
the moment a delay lands in still depends on the machine's speed. The subprocess is the CLI's own ``main``
in a child forked from a process that already imported it (``rig.SyncZygote``), so the delay measures the
sync and not Python's imports (``tests/replication/test_crash_safety.py`` kills `python -m ...cli` itself).
"""

from __future__ import annotations

import collections
import os
import random
import time

import pytest

from .invariant import MirrorChecker
from .rig import FaultRig
from .workload import SourceWorkload

pytestmark = pytest.mark.integration

# (failpoint, highest n): every write step of the engine, at a random one of its first n hits.
FAILPOINTS = [
    ("after_object_copy", 8),
    ("before_range_file", 2),
    ("after_range_file", 2),
    ("after_metarange_file", 2),
    ("before_mark_validated", 2),
    ("after_commit_record", 3),
    ("before_ref_move", 2),
]
_FAILPOINT_SHARE = 0.35
_FULL_CHECK_EVERY = 10  # every n-th check re-reads every object, not only new ones


def _trials() -> int:
    return max(1, int(os.environ.get("LAKEFS_MIRROR_FAULT_TRIALS", "50")))


def test_sync_killed_at_random_points_never_exposes_a_partial_commit(rig: FaultRig) -> None:
    trials = _trials()
    seed = int(os.environ.get("LAKEFS_MIRROR_FAULT_SEED") or random.SystemRandom().randrange(2**31))
    print(f"\n[faults] SIGKILL trials: {trials}, seed {seed} (LAKEFS_MIRROR_FAULT_SEED={seed} replays it)")
    rng = random.Random(seed)
    pair = rig.new_pair("kill")
    work = SourceWorkload(pair.src, pair.repo, seed)
    work.seed_main()
    checker = MirrorChecker(pair)
    first = rig.run_sync(pair.mirror)
    assert first.returncode == 0, first.output[-3000:]
    typical = max(0.3, first.seconds)  # how long an undisturbed sync of one step takes; kept up to date

    counts: collections.Counter[str] = collections.Counter()
    phases: collections.Counter[str] = collections.Counter()
    violations: list[str] = []
    full_every = max(_FULL_CHECK_EVERY, trials // 10)  # re-reading every object costs more as the repo grows
    started = time.monotonic()
    for n in range(trials):
        t0 = time.monotonic()
        change = work.step()
        t1 = time.monotonic()
        failpoint = None
        if rng.random() < _FAILPOINT_SHARE:
            name, highest = rng.choice(FAILPOINTS)
            failpoint = f"{name}:{rng.randint(1, highest)}"
        delay = None if failpoint else rng.uniform(0.0, 1.2 * typical)
        outcome = rig.run_sync(pair.mirror, failpoint=failpoint, kill_after=delay, label=f"sigkill trial {n}")
        t2 = time.monotonic()
        if failpoint:
            kind = "failpoint hit" if outcome.returncode == 137 else "failpoint not reached"
        else:
            kind = "killed" if outcome.killed else "finished before the kill"
        if outcome.returncode == 0:
            typical = 0.7 * typical + 0.3 * outcome.seconds
        counts[kind] += 1
        cut = f" at {failpoint}" if failpoint else f" after {delay:.2f}s"
        what = f"trial {n} ({kind}{cut}; after: {change}; seed {seed})"
        if outcome.returncode not in (0, 137, -9) or outcome.hung:
            violations.append(f"{what}: sync exited {outcome.returncode}:\n{outcome.tail(15)}")
        violations += [f"{what}: {v}" for v in checker.refs_violations(full=n % full_every == 0)]
        phases.update({"change": t1 - t0, "sync": t2 - t1, "check": time.monotonic() - t2})
    trial_seconds = time.monotonic() - started

    final = rig.run_sync(pair.mirror, label="sigkill final sync")
    assert final.returncode == 0, final.output[-3000:]
    violations += [f"after the final sync (seed {seed}): {v}" for v in checker.converged_violations()]
    per_phase = {k: round(v) for k, v in phases.items()}
    print(
        f"[faults] {trials} trials in {trial_seconds:.0f}s: {dict(counts)}; refs checked {checker.checked_refs}, "
        f"objects compared {checker.checked_objects}; typical sync {typical:.2f}s; seconds per phase {per_phase}; "
        f"violations: {len(violations)}"
    )
    for v in violations:
        print(f"[faults] VIOLATION {v}")
    assert not violations, f"{len(violations)} violation(s) with seed {seed}, first: {violations[0]}"
    assert counts["killed"] + counts["failpoint hit"] >= trials // 2, f"too few trials were really cut: {counts}"
