"""The report of ``wan.py``: one table per part, a row per round trip, each figure beside issue 34's goal."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from _lag_measure import ModeResult
from _lag_report import percentile
from _machine import machine_load
from backfill_vs_rclone import Figure

__all__ = [
    "GOAL_EGRESS_DEVIATION",
    "GOAL_INCREMENTAL_REQUESTS",
    "GOAL_LAG_P50_S",
    "GOAL_MS_PER_COMMIT",
    "Backfill",
    "HistoryRound",
    "egress_report",
    "report",
    "size_text",
]

#: Issue 34's goals for the history-heavy first sync, ms per commit: at 80 ms and at 0 ms round trip.
GOAL_MS_PER_COMMIT = {80.0: 9.0, 0.0: 3.0}
#: Issue 34's goals: a one-commit incremental in round trips; the egress limit held within 10 %.
GOAL_INCREMENTAL_REQUESTS = 10
GOAL_EGRESS_DEVIATION = 0.10
#: Issue 34's goal for the commit-to-mirror lag with hooks in the engine loop at 80 ms: p50, seconds.
GOAL_LAG_P50_S = 1.5
#: The round trip at which the goals of the backfills and the lag are set.
GOAL_RTT = 80.0


@dataclass(frozen=True)
class Backfill:
    """One backfill part: ``objects`` x ``size`` bytes, ours against rclone, and the throughput ratio it aims at."""

    part: str
    objects: int
    size: int
    goal_ratio: float

    @property
    def title(self) -> str:
        return f"backfill of {self.objects:,} x {size_text(self.size)}, part `{self.part}`"


@dataclass
class HistoryRound:
    """A first sync of the history and a one-commit incremental after it, with the source's requests of each
    and the ``CreateCommitRecord`` requests the mirror's lakeFS served in the first."""

    first: Figure
    requests: Counter[str]
    commit_record_requests: int
    #: One-commit incrementals after it, by ``--commit-records`` name: seconds, the source's requests.
    incremental: dict[str, tuple[float, Counter[str]]]
    #: Requests each region's MinIO served in the first sync, by S3 operation (by MinIO name).
    store_requests: dict[str, Counter[str]]


def size_text(size: int) -> str:
    """``64 MiB``, ``16 KiB`` or ``1,000 B``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} B"


def _verdict(rtt: float, met: bool) -> str:
    return "" if rtt != GOAL_RTT else ("meets" if met else "misses")


def _backfill_table(backfill: Backfill, rtts: list[float], rounds: dict[float, list[Figure]]) -> None:
    print(f"\n{backfill.title} (goal at {GOAL_RTT:g} ms: ours/rclone >= {backfill.goal_ratio:.1f})")
    head = f"{'ours s':>8}  {'ours MB/s':>9}  {'rclone s':>8}  {'ratio':>6}  {'toxiproxy CPU s':>15}"
    print(f"  {'rtt':>6}  {head}  verdict")
    for rtt in rtts:
        figs = {f.name: f for f in rounds[rtt]}
        mine, other = figs["ours"], figs.get("rclone sync")
        ratio = other.seconds / mine.seconds if other else float("nan")
        verdict = "" if other is None else _verdict(rtt, ratio >= backfill.goal_ratio)
        proxy_cpu = mine.server_cpu.get("toxiproxy", 0.0)
        print(
            f"  {rtt:>4g}ms  {mine.seconds:>8.1f}  {mine.payload_bytes / mine.seconds / 1e6:>9.1f}  "
            f"{other.seconds if other else float('nan'):>8.1f}  {ratio:>6.2f}  {proxy_cpu:>15.1f}  {verdict}"
        )
        print(f"  {'':>6}  ours: {mine.note}; {mine.cpu_text()}")
        if other is not None:
            print(f"  {'':>6}  rclone: {other.cpu_text()}")


def _history_tables(rtts: list[float], first_sync: dict[float, HistoryRound], commits: int, refs: str) -> None:
    print(
        f"\nhistory-heavy first sync: {commits:,} commits, {refs} "
        f"(goals: <= {GOAL_MS_PER_COMMIT[80.0]:g} ms/commit at 80 ms, <= {GOAL_MS_PER_COMMIT[0.0]:g} at 0 ms)"
    )
    head = f"{'seconds':>8}  {'ms/commit':>9}  {'API req/commit':>14}  {'toxiproxy CPU s':>15}"
    print(f"  {'rtt':>6}  {head}  verdict")
    for rtt in rtts:
        figure, requests = first_sync[rtt].first, first_sync[rtt].requests
        per_commit = figure.seconds * 1000 / commits
        goal = GOAL_MS_PER_COMMIT.get(rtt)
        verdict = "" if goal is None else ("meets" if per_commit <= goal else "misses")
        proxy_cpu = figure.server_cpu.get("toxiproxy", 0.0)
        print(
            f"  {rtt:>4g}ms  {figure.seconds:>8.1f}  {per_commit:>9.1f}  "
            f"{sum(requests.values()) / commits:>14.2f}  {proxy_cpu:>15.1f}  {verdict}"
        )
        top = ", ".join(f"{op} {n / commits:.2f}" for op, n in requests.most_common(6))
        print(f"  {'':>6}  source lakeFS requests per commit: {top}")
        for minio, counts in first_sync[rtt].store_requests.items():
            ops = ", ".join(f"{op} {n / commits:.2f}" for op, n in counts.most_common(6))
            print(f"  {'':>6}  {minio} requests per commit: {ops}")
        records = first_sync[rtt].commit_record_requests
        print(f"  {'':>6}  CreateCommitRecord requests at the mirror's lakeFS: {records}")
        print(f"  {'':>6}  ours: {figure.note}; {figure.cpu_text()}")
    print(f"\none-commit incremental after each first sync (goal: <= {GOAL_INCREMENTAL_REQUESTS} round trips)")
    for rtt in rtts:
        for name, (seconds, requests) in first_sync[rtt].incremental.items():
            total = sum(requests.values())
            verdict = "meets" if total <= GOAL_INCREMENTAL_REQUESTS else "misses"
            ops = ", ".join(f"{op} {n}" for op, n in requests.most_common())
            print(f"  {rtt:>4g}ms  {name:>8}  {seconds:>6.2f}s  {total:>3} source requests  {verdict}  ({ops})")


def _lag_table(rtts: list[float], lag: dict[float, ModeResult], commits: int) -> None:
    print(
        f"\ncommit-to-mirror lag with hooks, engine loop (`sync`), {commits} commit(s) per round trip "
        f"(goal at {GOAL_RTT:g} ms: p50 <= {GOAL_LAG_P50_S:g} s)"
    )
    print(f"  {'rtt':>6}  {'n':>3}  {'p50 s':>6}  {'p95 s':>6}  {'max s':>6}  {'min s':>6}  verdict")
    for rtt in rtts:
        result = lag[rtt]
        lags = result.lags
        error = f"  ({result.error})" if result.error else ""
        if not lags:
            print(f"  {rtt:>4g}ms  {0:>3}  no sample{error}  {_verdict(rtt, False)}")
            continue
        p50 = statistics.median(lags)
        print(
            f"  {rtt:>4g}ms  {len(lags):>3}  {p50:>6.2f}  {percentile(lags, 95):>6.2f}  {max(lags):>6.2f}  "
            f"{min(lags):>6.2f}  {_verdict(rtt, p50 <= GOAL_LAG_P50_S and not result.error)}{error}"
        )


def report(
    rate_text: str,
    rtts: list[float],
    backfills: dict[Backfill, dict[float, list[Figure]]],
    first_sync: dict[float, HistoryRound],
    history: tuple[int, str],
    lag: dict[float, ModeResult],
    lag_commits: int,
) -> None:
    """Every part measured, side by side: ``history`` is (commits, its branches and tags as text)."""
    print(f"\n##### side by side (link rate {rate_text}; {machine_load()})")
    for backfill, rounds in backfills.items():
        _backfill_table(backfill, rtts, rounds)
    if first_sync:
        _history_tables(rtts, first_sync, *history)
    if lag:
        _lag_table(rtts, lag, lag_commits)


def egress_report(limit_text: str, rtt: float, limit: int, rate: float, copy_s: float, figure: Figure) -> None:
    """The egress part: the rate held while copying, beside the limit and the goal."""
    deviation = rate / limit - 1
    verdict = "meets" if abs(deviation) <= GOAL_EGRESS_DEVIATION and copy_s >= 30 else "misses"
    print(
        f"\negress: transfer.max_bytes_per_second {limit_text} ({limit / 1e6:.2f} MB/s) at {rtt:g} ms: "
        f"{rate / 1e6:.2f} MB/s over {copy_s:.1f}s of copying ({deviation:+.1%}; goal within "
        f"{GOAL_EGRESS_DEVIATION:.0%} over 30 s)  {verdict}"
    )
    print(f"  ours: {figure.note}; {figure.cpu_text()}")
