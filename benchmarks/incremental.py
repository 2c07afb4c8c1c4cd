"""Incremental cost: the sync pass that mirrors one new 1-object commit, small repository vs large one.

Two source repositories (default 1,000 and 200,000 objects) are built and fully mirrored (region-a on
MinIO A -> region-c on MinIO B); then each gets one commit adding one object, and the sync pass that
mirrors it is timed. Where the new key falls matters to lakeFS: a key after every existing key
(``end``: e.g. a new partition) lands in a new range and leaves the old ones untouched, a key between
existing keys (``middle``) makes lakeFS rewrite the range that holds it. Both are measured.

An engine whose incremental cost follows the change, not the repository, gives a large/small ratio near 1
(goal: <= 1.5). Also printed per pass: metadata files read from the source, and objects the pass looked at
(copied + found present), which is where the cost of a changed range shows.

    .venv/bin/python benchmarks/incremental.py [--small 1000] [--large 200000] [--repeat 1] [--quick]
        [--object-size 1024] [--placements end,middle] [--build links|ranges]

Repositories of 50,000 objects or more are built with the ranges builder unless ``--build links``
(``_repositories.build_repository``); ``--build`` applies to both repositories.

The initial backfills run in a child process, whose peak RSS and time are printed as a by-product. Before the
timed passes of each repository, the benchmark waits (at most 90 s) until the cores are 80 % idle over a second
(``wait_until_quiet``: the servers go on working for a while after a large backfill) and makes one untimed pass
(a key after every key), so neither the tail of the backfill nor this process's first connections are charged to
a timed pass. The first ``middle`` pass still reads the rewritten range's base, as a new process would.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _environment import MIRROR, SOURCE, bench_environment, create_mirror, service_config
from _machine import machine_load, wait_until_quiet
from _repositories import BuiltRepository, add_build_argument, add_one_object_commit, build_repository, object_path
from _sync import StageClock, format_stages, run_sync, sync_in_child
from lakefs_mirror_devenv import Environment

MiB = 1024 * 1024


@dataclass
class Pass:
    seconds: float
    metadata_reads: dict[str, int]
    objects_copied: int
    objects_looked_at: int
    ranges_transferred: int
    ranges_skipped: int
    #: seconds per stage of the pass (``StageClock``)
    stages: dict[str, float] = field(default_factory=dict)


@dataclass
class Measured:
    objects: int
    backfill_seconds: float
    backfill_peak_rss: int
    ranges: int
    passes: dict[str, list[Pass]] = field(default_factory=dict)
    build: BuiltRepository | None = None
    backfill_stages: dict[str, float] = field(default_factory=dict)
    #: what ``measure``'s ``after_backfill`` returned
    after_backfill: Any = None

    def median_seconds(self, placement: str) -> float:
        return statistics.median(p.seconds for p in self.passes[placement])


def new_path(placement: str, objects: int) -> str:
    """The new object's key: after every key (``end``) or right behind the middle object (``middle``)."""
    if placement == "end":
        return f"zz-new/{uuid.uuid4().hex}.bin"
    return f"{object_path('data', objects // 2)}.{uuid.uuid4().hex}"


def measure(
    env: Environment,
    objects: int,
    object_size: int,
    repeat: int,
    threads: int,
    placements: list[str],
    *,
    method: str | None = None,
    source: str = "api",
    after_backfill: Callable[[BuiltRepository, Path, str], Any] | None = None,
) -> Measured:
    """Build a repository of ``objects`` objects (``method``, see ``build_repository``), backfill a mirror of
    it in a child process reading the source through lakeFS (``source="api"``) or straight from MinIO
    (``direct``), call ``after_backfill(built, mirror config, mirror)``, then time ``repeat`` one-object commits
    per placement."""
    print(f"\n=== repository of {objects:,} objects ({machine_load()})", flush=True)
    built = build_repository(
        env, SOURCE, objects=objects, object_size=object_size, threads=threads, method=method
    )
    mirror = create_mirror(env, built.name)
    config = service_config(env, MIRROR, direct_source=SOURCE if source == "direct" else None)
    backfill = sync_in_child(config, mirror)
    if backfill.result["objects_copied"] != objects:
        raise RuntimeError(f"backfill copied {backfill.result['objects_copied']} objects, expected {objects}")
    ranges = int(backfill.result["ranges_validated"])
    print(
        f"[backfill] {objects:,} objects in {backfill.result['seconds']:.1f}s "
        f"({objects / backfill.result['seconds']:,.0f} objects/s), {ranges} ranges, "
        f"peak RSS {backfill.peak_rss_bytes / MiB:.0f} MiB; {format_stages(backfill.result['stages'])} "
        f"({machine_load()})",
        flush=True,
    )
    measured = Measured(objects, backfill.result["seconds"], backfill.peak_rss_bytes, ranges)
    measured.build, measured.backfill_stages = built, backfill.result["stages"]
    if after_backfill is not None:
        measured.after_backfill = after_backfill(built, config, mirror)
    print(f"[settle] {wait_until_quiet()} ({machine_load()})", flush=True)
    # this process's first pass of the mirror opens connections and fills caches (here and in lakeFS): not
    # timed. Its key goes after every key, so the range a middle key rewrites is not read by it.
    add_one_object_commit(env, SOURCE, built.name, new_path("end", objects))
    warm_up, _, _ = run_sync(config, mirror)
    print(f"[warm-up] an untimed pass of one key after every key: {warm_up:.2f}s", flush=True)
    for placement, i in ((p, i) for p in placements for i in range(repeat)):
        add_one_object_commit(env, SOURCE, built.name, new_path(placement, objects))
        clock = StageClock()
        seconds, result, reads = run_sync(config, mirror, stages=clock)
        [main] = [r for r in result.refs if r.kind == "branch" and r.name == "main"]
        s = main.stats
        if main.action != "advanced" or s.objects_copied != 1:
            raise RuntimeError(f"pass {i + 1}: expected main advanced with 1 object copied, got {main.to_json()}")
        p = Pass(
            seconds,
            reads,
            s.objects_copied,
            s.objects_copied + s.objects_skipped,  # objects_unchanged: diffed against a validated range, not looked at
            s.ranges_transferred,
            s.ranges_skipped,
            clock.split(),
        )
        measured.passes.setdefault(placement, []).append(p)
        print(
            f"[incremental] {placement} pass {i + 1}: {seconds:.2f}s, metadata reads {reads}, objects looked at "
            f"{p.objects_looked_at:,}, ranges transferred {p.ranges_transferred}, skipped {p.ranges_skipped}; "
            f"{format_stages(p.stages)} ({machine_load()})",
            flush=True,
        )
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=1_000, help="objects in the small repository")
    parser.add_argument("--large", type=int, default=200_000, help="objects in the large repository")
    parser.add_argument("--object-size", type=int, default=1024, help="bytes per object")
    parser.add_argument("--repeat", type=int, default=1, help="incremental commits (and passes) per repository")
    parser.add_argument("--threads", type=int, default=16, help="threads building the repositories")
    parser.add_argument("--placements", default="end,middle", help="where new keys go: end, middle")
    parser.add_argument("--quick", action="store_true", help="large repository of 20,000 objects")
    add_build_argument(parser)
    args = parser.parse_args()
    placements = [p.strip() for p in args.placements.split(",") if p.strip()]
    if not placements or any(p not in ("end", "middle") for p in placements):
        parser.error(f"--placements takes end and/or middle, got {args.placements!r}")
    if args.quick:
        args.large = min(args.large, 20_000)
    if min(args.small, args.large, args.object_size, args.repeat, args.threads) < 1:
        parser.error("counts and sizes must be at least 1")
    if args.large < args.small:
        parser.error(f"--large ({args.large}) must not be smaller than --small ({args.small})")
    print(f"start: {machine_load()}")
    with bench_environment() as env:
        small = measure(env, args.small, args.object_size, args.repeat, args.threads, placements, method=args.build)
        large = measure(env, args.large, args.object_size, args.repeat, args.threads, placements, method=args.build)
    print(f"\nincremental sync of one 1-object commit (median of {args.repeat}), {machine_load()}")
    for m in (small, large):
        print(
            f"  {m.objects:>9,} objects, {m.ranges:>3} ranges after backfill "
            f"(backfill {m.backfill_seconds:.0f}s, peak RSS {m.backfill_peak_rss / MiB:.0f} MiB)"
        )
        for placement in placements:
            p = m.passes[placement][-1]
            print(
                f"    new key at {placement:<6}: {m.median_seconds(placement):7.2f} s   metadata reads "
                f"{p.metadata_reads}, objects looked at {p.objects_looked_at:,}, ranges transferred "
                f"{p.ranges_transferred}"
            )
    for placement in placements:
        ratio = large.median_seconds(placement) / small.median_seconds(placement)
        verdict = "meets" if ratio <= 1.5 else "misses"
        print(f"  ratio large/small, new key at {placement}: {ratio:.2f}  ({verdict} goal <= 1.5)")


if __name__ == "__main__":
    main()
