"""A million objects: build a repository fast, backfill it, validate it on Spark, then one one-object commit.

1. Builds ``--objects`` (default 1,000,000) objects of 1 KiB in region-a with the ranges builder
   (``_ranges_build.py``: objects, range files and metarange written straight into its store, one commit
   record) and prints its rate.
2. Backfills a mirror of it in region-c in a child process, reading the source through lakeFS
   (``--source api``, the default) or straight from its store (``direct``, ``source_stores``): time,
   objects/s, peak RSS (goal <= 1 GB) and the split of the pass by stage (plan, range reads, transfer,
   validation, promotion).
3. Validates every range of that commit at the mirror with ``SparkRangeValidator`` on ``local[2]`` (goal
   <= 60 s, second call: the first also starts Spark's Python workers) and with the in-process validator.
4. Adds one object between existing keys (lakeFS rewrites that range) and times the sync pass that mirrors
   it, against the same on a ``--small`` (1,000) object repository built in the same run (goal: ratio
   <= 1.5). The steps are ``incremental.py``'s.

    .venv/bin/python benchmarks/million.py [--objects 1000000] [--small 1000] [--object-size 1024]
        [--build ranges|links] [--source api|direct] [--stores minio|local] [--spark-partitions 3]
        [--validator-workers 3]

``--stores minio`` (the default) puts region-a and region-c on two MinIO servers, so every copy crosses servers;
on 2 cores the MinIO servers' own CPU per object then sets the pace of building (~300 objects/s) and copying.
``--stores local`` puts each region on a local directory of its own: the figures are then the engine's (range
reads, planning, validation, memory) at that scale, with a file system's cost per object instead of a server's.

Try ``--objects 50000`` first. A million objects need about 3 GB free in each store's data directory (the
temp dir) and, on a quiet 2-core machine, tens of minutes (hours on MinIO).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import incremental
from _environment import STORES, add_stores_argument, bench_environment
from _machine import machine_load
from _mirror_validation import MirrorValidation, validate_at_mirror
from _repositories import BuiltRepository, add_build_argument
from _sync import format_stages

MiB = 1024 * 1024
GB = 1_000_000_000
VALIDATION_GOAL_S = 60.0
RATIO_GOAL = 1.5
RSS_GOAL = GB


def _verdict(ok: bool) -> str:
    return "meets" if ok else "misses"


def report(large: incremental.Measured, small: incremental.Measured, source: str, stores: str) -> None:
    """The figures next to their goals."""
    built, checked = large.build, large.after_backfill
    assert built is not None and isinstance(checked, MirrorValidation)
    n = large.objects
    print(f"\n{n:,} objects of {built.object_size:,} B, regions on {stores} storage ({machine_load()})")
    print(f"  build ({built.method}):     {built.seconds:8.1f} s  {n / built.seconds:10,.0f} objects/s")
    print(
        f"  backfill ({source}):      {large.backfill_seconds:8.1f} s  {n / large.backfill_seconds:10,.0f} objects/s, "
        f"peak RSS {large.backfill_peak_rss / MiB:,.0f} MiB ({_verdict(large.backfill_peak_rss <= RSS_GOAL)} goal "
        f"<= 1 GB), {large.ranges} ranges"
    )
    print(f"    stages: {format_stages(large.backfill_stages)}")
    spark = checked.spark_s[1]
    print(
        f"  validation on Spark local[2]: {spark:8.1f} s ({_verdict(spark <= VALIDATION_GOAL_S)} goal <= "
        f"{VALIDATION_GOAL_S:.0f} s; 1st call {checked.spark_s[0]:.1f} s + {checked.spark_startup_s:.1f} s session "
        f"start; in-process {checked.in_process_s:.1f} s), {checked.ranges} ranges"
    )
    big, little = large.passes["middle"][-1], small.passes["middle"][-1]
    ratio = big.seconds / little.seconds
    print(
        f"  one-object commit (middle): {big.seconds:6.2f} s vs {little.seconds:.2f} s at {small.objects:,} objects: "
        f"ratio {ratio:.2f} ({_verdict(ratio <= RATIO_GOAL)} goal <= {RATIO_GOAL})"
    )
    print(f"    stages at {n:,}: {format_stages(big.stages)}")
    print(f"    stages at {small.objects:,}: {format_stages(little.stages)}")
    print(
        f"    metadata reads {big.metadata_reads} vs {little.metadata_reads}; objects looked at "
        f"{big.objects_looked_at:,} vs {little.objects_looked_at:,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=1_000_000, help="objects in the large repository")
    parser.add_argument("--small", type=int, default=1_000, help="objects in the baseline repository")
    parser.add_argument("--object-size", type=int, default=1024, help="bytes per object")
    parser.add_argument("--threads", type=int, default=16, help="threads of the links builder")
    parser.add_argument("--spark-partitions", type=int, default=3, help="as validator.num_workers on Dagster")
    parser.add_argument("--validator-workers", type=int, default=3, help="threads of the in-process validator")
    parser.add_argument(
        "--source",
        choices=["api", "direct"],
        default="api",
        help="read the source through lakeFS or straight from its store",
    )
    add_build_argument(parser)
    add_stores_argument(parser)
    args = parser.parse_args()
    if min(args.objects, args.small, args.object_size, args.threads, args.spark_partitions) < 1:
        parser.error("counts and sizes must be at least 1")
    if args.objects < args.small:
        parser.error(f"--objects ({args.objects}) must not be smaller than --small ({args.small})")
    print(f"start: {machine_load()}")

    def validate(built: BuiltRepository, config: Path, mirror: str) -> MirrorValidation:
        return validate_at_mirror(
            config,
            mirror,
            built.commit_id,
            built.objects,
            spark_partitions=args.spark_partitions,
            validator_workers=args.validator_workers,
        )

    with bench_environment(STORES[args.stores]) as env:

        def measure(objects: int, after: Any = None) -> incremental.Measured:
            return incremental.measure(
                env, objects, args.object_size, 1, args.threads, ["middle"], method=args.build, source=args.source,
                after_backfill=after,
            )  # fmt: skip

        large = measure(args.objects, validate)
        small = measure(args.small)
        report(large, small, args.source, args.stores)  # before the teardown, which takes minutes for a million files
    print(f"end: {machine_load()}")


if __name__ == "__main__":
    main()
