"""Mirroring across real distance: the same run at 0, 20, 80 and 200 ms round trip, side by side (issue 34).

The source region (region-a, MinIO A) and the mirror region (region-c, MinIO B) are joined by a Toxiproxy link
(``devenv up --link region-a->region-c``): everything the mirror region's sync sends to the source (the source
lakeFS's API, and the source store through the URLs lakeFS presigns) crosses the link's proxies, whose latency
toxics are set to rtt/2 each way before each round. Per round trip it prints:

- backfill of ``--objects`` x ``--size`` (default 10,000 x 16 KiB): our sync of a fresh mirror vs ``rclone sync``
  of the same objects from the source store *through the same proxy* into the mirror's MinIO; the ratio of
  throughputs next to the goal (>= 1.2 at 80 ms), and our copies in flight (``transfer.concurrency``, set by
  ``--concurrency``: the limit, the most at once and the round trip ``auto`` measured);
- a history-heavy first sync (``--commits`` on main, ``--branches`` branches and ``--tags`` tags at earlier
  commits; default 5,000 / 100 / 200): seconds, ms per commit (goals: <= 9 ms at 80 ms, <= 3 ms at 0 ms), and the
  requests the source lakeFS served per commit, by operation (from its Prometheus ``/metrics``);
- a one-commit incremental on that repository after each first sync: the requests the source lakeFS served
  for it, by operation (goal: <= 10 round trips);
- egress control (``--parts egress``, at the last round trip): a backfill of ``--egress-seconds`` worth of
  1 MiB objects at ``transfer.max_bytes_per_second: --egress-limit``; the rate held while copying (bytes copied
  over the copy stages' seconds) next to the goal (within 10 % of the limit over 30 s);
- the CPU seconds of every server, Toxiproxy's included.

    .venv/bin/python benchmarks/wan.py [--objects 10000] [--size 16384] [--commits 5000] [--branches 100]
        [--tags 200] [--rtts 0,20,80,200] [--rate 0] [--transfers 16] [--concurrency auto|N]
        [--parts backfill,history,egress] [--egress-limit 50Mbit] [--egress-seconds 30]

Small smoke run: ``--objects 300 --commits 30 --branches 3 --tags 3 --rtts 0,80``.
rclone comes from the Debian package (``backfill_vs_rclone.py`` installs it when run as root).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _environment import MIRROR, SOURCE, bench_environment, create_mirror, service_config, split_s3_uri, unique
from _machine import machine_load
from _repositories import BuiltRepository, add_one_object_commit, build_repository
from _sync import format_stages, sync_in_child
from backfill_vs_rclone import GOAL_RATIO, Figure, ensure_rclone, measured, rclone_sync
from lakefs_mirror_devenv import Environment, LinkSpec

from lakefs_mirror_dagster.config import parse_byte_rate
from lakefs_mirror_dagster.lakefs import LakeFSClient

#: Issue 34's goals for the history-heavy first sync, ms per commit: at 80 ms and at 0 ms round trip.
GOAL_MS_PER_COMMIT = {80.0: 9.0, 0.0: 3.0}
#: Issue 34's goals: a one-commit incremental in round trips; the egress limit held within 10 %.
GOAL_INCREMENTAL_REQUESTS = 10
GOAL_EGRESS_DEVIATION = 0.10
MiB = 1024 * 1024


def set_round_trip(env: Environment, rtt_ms: float, rate_bits: float) -> None:
    """Every proxy of the link to ``rtt_ms`` (rtt/2 each way) and ``rate_bits`` (0: unlimited)."""
    assert env.toxiproxy is not None
    spec = LinkSpec(SOURCE, MIRROR, rtt_ms=rtt_ms, rate_bits=rate_bits)
    for proxy in env.links[0]["proxies"].values():
        env.toxiproxy.reshape(proxy, spec)


def api_requests(env: Environment) -> Counter[str]:
    """Requests the source lakeFS has served so far, by API operation (its ``api_request_duration_seconds``)."""
    counts: Counter[str] = Counter()
    with urllib.request.urlopen(f"{env.region(SOURCE).endpoint}/metrics", timeout=30) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("api_request_duration_seconds_count{"):
                labels, value = line.rsplit(" ", 1)
                operation = labels.split('operation="', 1)[1].split('"', 1)[0]
                counts[operation] += int(float(value))
    return counts


def build_history(env: Environment, commits: int, branches: int, tags: int) -> tuple[str, int]:
    """A repository with ``commits`` one-object commits on main, branches and tags at earlier commits; its name
    and its number of commits."""
    region = env.region(SOURCE)
    client = LakeFSClient(region.endpoint, region.access_key_id, region.secret_access_key, timeout_s=300.0)
    name = unique("history")
    started = time.monotonic()
    try:
        client.create_repository(name, region.namespace_for(name))
        ids = []
        for i in range(commits):
            client.upload_object(name, "main", f"log/{i:06d}.txt", f"commit {i}\n".encode())
            ids.append(client.commit(name, "main", f"commit {i}").id)
        for b in range(branches):
            client.create_branch(name, f"b{b:03d}", ids[(b * len(ids)) // max(branches, 1)])
        for t in range(tags):
            client.create_tag(name, f"v{t:03d}", ids[(t * len(ids)) // max(tags, 1)])
    finally:
        client.close()
    print(
        f"[history] {commits} commits, {branches} branches, {tags} tags in {time.monotonic() - started:.1f}s",
        flush=True,
    )
    return name, commits + 1  # and lakeFS's initial commit


def ours(env: Environment, config: Path, repo: str, payload: int, expected_objects: int | None) -> Figure:
    """A fresh mirror of ``repo`` synced by the mirror region's ``config`` (which reaches the source by the link)."""
    mirror = create_mirror(env, repo)
    child = sync_in_child(config, mirror)
    copied = child.result["objects_copied"]
    if expected_objects is not None and copied != expected_objects:
        raise RuntimeError(f"mirror {mirror}: copied {copied} objects, expected {expected_objects}")
    note = f"process {child.seconds:.1f}s, {format_stages(child.result['stages'])}{in_flight(child.result)}"
    return Figure("ours", child.result["seconds"], payload, child.cpu_seconds, note=note)


def in_flight(result: dict[str, object]) -> str:
    """The pass's copies in flight as its result reports them (``transfer.concurrency``), or nothing."""
    figures = result.get("copies_in_flight")
    if not isinstance(figures, dict):
        return ""
    rtt = figures["round_trip_seconds"]
    measured = f", source round trip {rtt * 1000:.0f} ms" if isinstance(rtt, float) else ""
    how = "auto" if figures["auto"] else "fixed"
    return f"; copies in flight: limit {figures['limit']} ({how}), at most {figures['peak']} at once{measured}"


def backfill_round(
    env: Environment, config: Path, built: BuiltRepository, rclone: str | None, transfers: int
) -> list[Figure]:
    src_bucket, src_prefix = split_s3_uri(built.namespace)
    dst_bucket, _ = split_s3_uri(env.region(MIRROR).namespace_root + "/x")
    payload = built.objects * built.object_size
    figures = [measured(env, lambda: ours(env, config, built.name, payload, built.objects))]
    if rclone:
        assert env.toxiproxy is not None
        store_proxy = env.toxiproxy.proxies[env.links[0]["proxies"]["store"]]
        # rclone reads the source store through the link's proxy, as our sync's presigned reads do.
        src = dataclasses.replace(env.minio["minio-a"], endpoint=f"http://{store_proxy}")
        dst = env.minio["minio-c"]
        src_path, dst_path = f"{src_bucket}/{src_prefix}", f"{dst_bucket}/rclone-{uuid.uuid4().hex[:8]}"
        figures.append(measured(env, lambda: rclone_sync(rclone, src, dst, src_path, dst_path, transfers, payload)))
    return figures


@dataclasses.dataclass
class HistoryRound:
    """A first sync of the history and a one-commit incremental after it, with the source's requests of each."""

    first: Figure
    requests: Counter[str]
    incremental_seconds: float
    incremental_requests: Counter[str]


def history_round(env: Environment, config: Path, repo: str, commits: int) -> HistoryRound:
    before = api_requests(env)
    mirror: list[str] = []

    def first_sync() -> Figure:
        mirror.append(create_mirror(env, repo))
        child = sync_in_child(config, mirror[0])
        note = f"process {child.seconds:.1f}s, {format_stages(child.result['stages'])}"
        return Figure("ours", child.result["seconds"], 0, child.cpu_seconds, note=note)

    figure = measured(env, first_sync)
    requests = api_requests(env) - before
    add_one_object_commit(env, SOURCE, repo, f"incremental/{uuid.uuid4().hex[:8]}.bin")
    before = api_requests(env)
    child = sync_in_child(config, mirror[0])
    return HistoryRound(figure, requests, child.result["seconds"], api_requests(env) - before)


def egress_round(
    env: Environment, transfer: dict[str, object], limit: int, seconds: float
) -> tuple[float, float, Figure]:
    """A backfill of ``seconds`` worth of 1 MiB objects at ``limit`` bytes/s: (bytes/s while copying, copy
    seconds, the figure). The rate is the child's bytes copied over its copy stages (range reads + transfer)."""
    objects = max(4, math.ceil(limit * seconds / MiB))
    built = build_repository(env, SOURCE, objects=objects, object_size=MiB)
    limited = service_config(env, MIRROR, transfer={**transfer, "max_bytes_per_second": limit})
    result: dict[str, object] = {}

    def run() -> Figure:
        mirror = create_mirror(env, built.name)
        child = sync_in_child(limited, mirror)
        result.update(child.result)
        note = f"process {child.seconds:.1f}s, {format_stages(child.result['stages'])}"
        return Figure("ours", child.result["seconds"], built.objects * MiB, child.cpu_seconds, note=note)

    figure = measured(env, run)
    stages = result["stages"]
    assert isinstance(stages, dict)
    copy_s = stages.get("range reads", 0.0) + stages.get("transfer", 0.0)
    copied = result["bytes_copied"]
    assert isinstance(copied, int)
    return (copied / copy_s if copy_s > 0 else float("nan")), copy_s, figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000, help="objects of the backfill")
    parser.add_argument("--size", type=int, default=16 * 1024, help="bytes per backfill object")
    parser.add_argument("--commits", type=int, default=5000, help="commits on main of the history repository")
    parser.add_argument("--branches", type=int, default=100, help="branches of the history repository")
    parser.add_argument("--tags", type=int, default=200, help="tags of the history repository")
    parser.add_argument("--rtts", default="0,20,80,200", help="round trips in ms, comma-separated")
    parser.add_argument("--rate", type=float, default=0.0, help="link rate in Mbit/s each way (0: unlimited)")
    parser.add_argument("--transfers", type=int, default=16, help="rclone's --transfers and --checkers")
    parser.add_argument(
        "--concurrency", default="", help="our transfer.concurrency (a number or auto; default: the config's default)"
    )
    parser.add_argument("--parts", default="backfill,history,egress", help="comma-separated: backfill, history, egress")
    parser.add_argument("--egress-limit", default="50Mbit", help="transfer.max_bytes_per_second of the egress part")
    parser.add_argument("--egress-seconds", type=float, default=30.0, help="seconds of data at the egress limit")
    args = parser.parse_args()
    try:
        rtts = [float(r) for r in args.rtts.split(",") if r.strip()]
    except ValueError:
        parser.error(f"--rtts {args.rtts!r}: expected milliseconds such as 0,20,80,200")
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if bad := parts - {"backfill", "history", "egress"}:
        parser.error(f"unknown part(s): {', '.join(sorted(bad))}")
    if not rtts or min(rtts) < 0 or min(args.objects, args.size, args.commits, args.transfers) < 1:
        parser.error("round trips must be >= 0 ms; counts and sizes at least 1")
    try:
        egress_limit = parse_byte_rate(args.egress_limit)
    except ValueError as exc:
        parser.error(f"--egress-limit: {exc}")
    rclone = ensure_rclone() if "backfill" in parts else None
    print(f"start: {machine_load()}")
    transfer: dict[str, object] = {"concurrency": args.concurrency} if args.concurrency else {}
    with bench_environment(links=(LinkSpec(SOURCE, MIRROR),)) as env:
        config = service_config(env, MIRROR, transfer=transfer)
        built = None
        if "backfill" in parts:
            built = build_repository(env, SOURCE, objects=args.objects, object_size=args.size)
        history = build_history(env, args.commits, args.branches, args.tags) if "history" in parts else None
        backfill: dict[float, list[Figure]] = {}
        first_sync: dict[float, HistoryRound] = {}
        egress = None
        for rtt in rtts:
            set_round_trip(env, rtt, args.rate * 1e6)
            print(f"\n=== {rtt:g} ms round trip ({machine_load()})", flush=True)
            if built is not None:
                backfill[rtt] = backfill_round(env, config, built, rclone, args.transfers)
            if history is not None:
                first_sync[rtt] = history_round(env, config, *history)
        if "egress" in parts and egress_limit > 0:
            print(f"\n=== egress at {args.egress_limit} over {rtts[-1]:g} ms ({machine_load()})", flush=True)
            egress = (rtts[-1], egress_limit, *egress_round(env, transfer, egress_limit, args.egress_seconds))
        report(args, rtts, backfill, first_sync, history[1] if history else 0)
        if egress is not None:
            rtt, limit, rate, copy_s, figure = egress
            deviation = rate / limit - 1
            verdict = "meets" if abs(deviation) <= GOAL_EGRESS_DEVIATION and copy_s >= 30 else "misses"
            print(
                f"\negress: transfer.max_bytes_per_second {args.egress_limit} ({limit / 1e6:.2f} MB/s) at {rtt:g} ms: "
                f"{rate / 1e6:.2f} MB/s over {copy_s:.1f}s of copying ({deviation:+.1%}; goal within "
                f"{GOAL_EGRESS_DEVIATION:.0%} over 30 s)  {verdict}"
            )
            print(f"  ours: {figure.note}; {figure.cpu_text()}")


def report(
    args: argparse.Namespace,
    rtts: list[float],
    backfill: dict[float, list[Figure]],
    first_sync: dict[float, HistoryRound],
    commits: int,
) -> None:
    rate = f"{args.rate:g} Mbit/s" if args.rate else "unlimited"
    print(f"\n##### side by side (link rate {rate}; {machine_load()})")
    if backfill:
        print(f"\nbackfill of {args.objects:,} x {args.size:,} B (goal at 80 ms: ours/rclone >= {GOAL_RATIO})")
        head = f"{'ours s':>8}  {'ours MB/s':>9}  {'rclone s':>8}  {'ratio':>6}  {'toxiproxy CPU s':>15}"
        print(f"  {'rtt':>6}  {head}  verdict")
        for rtt in rtts:
            figs = {f.name: f for f in backfill[rtt]}
            mine, other = figs["ours"], figs.get("rclone sync")
            ratio = other.seconds / mine.seconds if other else float("nan")
            verdict = "" if other is None or rtt != 80 else ("meets" if ratio >= GOAL_RATIO else "misses")
            proxy_cpu = mine.server_cpu.get("toxiproxy", 0.0)
            print(
                f"  {rtt:>4g}ms  {mine.seconds:>8.1f}  {mine.payload_bytes / mine.seconds / 1e6:>9.1f}  "
                f"{other.seconds if other else float('nan'):>8.1f}  {ratio:>6.2f}  {proxy_cpu:>15.1f}  {verdict}"
            )
            print(f"  {'':>6}  ours: {mine.note}; {mine.cpu_text()}")
    if first_sync:
        print(
            f"\nhistory-heavy first sync: {commits:,} commits, {args.branches} branches, {args.tags} tags "
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
        print(f"\none-commit incremental after each first sync (goal: <= {GOAL_INCREMENTAL_REQUESTS} round trips)")
        for rtt in rtts:
            r = first_sync[rtt]
            total = sum(r.incremental_requests.values())
            verdict = "meets" if total <= GOAL_INCREMENTAL_REQUESTS else "misses"
            ops = ", ".join(f"{op} {n}" for op, n in r.incremental_requests.most_common())
            print(
                f"  {rtt:>4g}ms  {r.incremental_seconds:>6.2f}s  {total:>3} source lakeFS requests  {verdict}  ({ops})"
            )


if __name__ == "__main__":
    main()
