"""The report of ``lag.py``: p50, p95 and max per mode, each figure beside its goal, and where the time went."""

from __future__ import annotations

import math
import os
import statistics

from _lag_measure import STAGES, ModeResult
from _lag_setup import HOOKS_POLLING, POLL_S
from lakefs_mirror_devenv.dagster_audit import stage_table

__all__ = [
    "GOALS",
    "goals_met",
    "percentile",
    "report",
]

#: Per mode, the goals for p50 and p95 (None: no goal).
GOALS: dict[str, tuple[float | None, float | None]] = {
    "dagster": (10.0, None),
    "engine": (None, None),
    "dagster-hooks": (4.0, 8.0),
    "engine-hooks": (1.0, 2.0),
}


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100), the value a reader can find in the raw list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _goal_text(value: float, goal: float | None) -> str:
    """``1.23s (goal <= 2s ok)``: a figure with its goal next to it."""
    if goal is None:
        return f"{value:7.2f}s {'':17}"
    verdict = "ok" if value <= goal else "MISSED"
    return f"{value:7.2f}s (goal <= {goal:g}s {verdict:6})"


def goals_met(result: ModeResult) -> bool:
    """Whether the mode's p50 and p95 are within its goals (a mode with an error or no sample misses them)."""
    lags = result.lags
    if not lags or result.error:
        return False
    p50_goal, p95_goal = GOALS[result.mode]
    return (p50_goal is None or statistics.median(lags) <= p50_goal) and (
        p95_goal is None or percentile(lags, 95) <= p95_goal
    )


def report(results: list[ModeResult], interval: str, commits: int) -> bool:
    """Print p50/p95/max per mode with each goal beside its figure, the Dagster stage medians, and whether
    every goal is met."""
    print(
        f"\n[lag] source commit -> mirror head, {commits} commit(s) per mode, polling interval {interval} "
        f"({HOOKS_POLLING} in the hook modes), poll {POLL_S}s"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"[lag] load average now {load} on {os.cpu_count()} CPU(s): other work on the machine inflates every figure")
    print(f"  {'mode':13} {'n':>3} {'p50':>29} {'p95':>29} {'max':>8} {'min':>8}")
    for r in results:
        lags = r.lags
        if lags:
            p50_goal, p95_goal = GOALS[r.mode]
            print(
                f"  {r.mode:13} {len(lags):3d} {_goal_text(statistics.median(lags), p50_goal)} "
                f"{_goal_text(percentile(lags, 95), p95_goal)} {max(lags):7.2f}s {min(lags):7.2f}s"
                + (f"  ({r.error})" if r.error else "")
            )
        else:
            print(f"  {r.mode:13}   0  no sample: {r.error}")
    for r in results:
        if r.stages:
            print(f"\n[lag] where the time goes under {r.mode} (median / max over {len(r.stages)} run(s)):")
            print("\n".join(stage_table(r.stages, STAGES)))
        elif r.mode.startswith("dagster"):
            print(f"\n[lag] {r.mode}: no run with every stage's event in its log (nothing to split)")
        if r.ticks:
            print(f"  commit sensor: {r.ticks}")
    met = all(goals_met(r) for r in results if GOALS[r.mode] != (None, None))
    print(f"\n[lag] goals: {'MET' if met else 'MISSED'}")
    return met
