"""Memory of a big backfill, and range validation on Spark vs in-process, on one large commit.

1. Peak RSS of the process that mirrors a repository from scratch (region-a on MinIO A -> region-c on
   MinIO B): the sync runs in a child process and its own ``ru_maxrss`` (from ``wait4``) is reported.
   ``--case 200k`` (default): 200,000 objects of 1 KiB, goal <= 1 GB. ``--case large20``: 20 objects of
   64 MiB, ``--case huge``: one object of 2 GiB, both with the default ``transfer`` settings, goal
   <= 512 MiB (``transfer.max_bytes_in_flight`` bounds the bytes buffered, whatever the object sizes).
2. Validation of that commit's ranges at the mirror (every range hashes to its ID, every object is
   present with its size): ``SparkRangeValidator`` on a local SparkSession (as the tests build it) vs the
   engine's ``in_process_validator``, same range IDs, same store. Spark session start-up is timed apart.

    .venv/bin/python benchmarks/peak_rss.py [--case 200k|large20|huge] [--source api|direct]
        [--objects 200000] [--object-size 1024] [--quick] [--spark-partitions 3] [--validator-workers 3]
        [--no-spark] [--build links|ranges]

The large cases need about 2.5 GB free in the temp dir and in MinIO's data directory (``huge``) and skip
validation (``--no-spark`` is implied).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _environment import MIRROR, SOURCE, bench_environment, create_mirror, service_config
from _machine import machine_load
from _mirror_validation import validate_at_mirror
from _repositories import add_build_argument, build_repository
from _sync import sync_in_child

MiB = 1024 * 1024
GiB = 1024 * MiB
GB = 1_000_000_000
#: case -> (objects, object size, RSS goal in bytes, goal as printed)
CASES: dict[str, tuple[int, int, int, str]] = {
    "200k": (200_000, 1024, GB, "1 GB"),
    "large20": (20, 64 * MiB, 512 * MiB, "512 MiB"),
    "huge": (1, 2 * GiB, 512 * MiB, "512 MiB"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=sorted(CASES), default="200k", help="objects and goal (see above)")
    parser.add_argument(
        "--source", choices=["api", "direct"], default="api", help="read the source through lakeFS or from MinIO"
    )
    parser.add_argument("--objects", type=int, help="overrides the case's object count")
    parser.add_argument("--object-size", type=int, help="bytes per object; overrides the case's")
    parser.add_argument("--threads", type=int, default=16, help="threads building the repository")
    parser.add_argument("--spark-partitions", type=int, default=3, help="as validator.num_workers on Dagster")
    parser.add_argument("--validator-workers", type=int, default=3, help="threads of the in-process validator")
    parser.add_argument("--no-spark", action="store_true", help="only the peak RSS figure")
    parser.add_argument("--quick", action="store_true", help="20,000 objects")
    add_build_argument(parser)
    args = parser.parse_args()
    case_objects, case_size, goal, goal_text = CASES[args.case]
    args.objects = args.objects or case_objects
    args.object_size = args.object_size or case_size
    if args.case != "200k":
        args.no_spark = True
    if args.quick:
        args.objects = min(args.objects, 20_000)
    if min(args.objects, args.object_size, args.threads, args.spark_partitions, args.validator_workers) < 1:
        parser.error("counts and sizes must be at least 1")
    print(f"start: {machine_load()}")
    with bench_environment() as env:
        built = build_repository(
            env, SOURCE, objects=args.objects, object_size=args.object_size, threads=args.threads, method=args.build
        )
        mirror = create_mirror(env, built.name)
        config_path = service_config(env, MIRROR, direct_source=SOURCE if args.source == "direct" else None)
        print(f"[backfill] mirroring {args.objects:,} objects in a child process ({machine_load()})", flush=True)
        child = sync_in_child(config_path, mirror)
        if child.result["objects_copied"] != args.objects:
            raise RuntimeError(f"backfill copied {child.result['objects_copied']} objects, expected {args.objects}")
        verdict = "meets" if child.peak_rss_bytes <= goal else "misses"
        rss_line = (
            f"peak RSS of the backfill of {args.objects:,} x {args.object_size:,} B (case {args.case}, source "
            f"{args.source}): {child.peak_rss_bytes / MiB:,.0f} MiB ({child.peak_rss_bytes / GB:.2f} GB, {verdict} "
            f"goal <= {goal_text}); sync {child.result['seconds']:.1f}s, {child.result['ranges_validated']} ranges "
            f"({machine_load()})"
        )
        print(rss_line, flush=True)
        if args.no_spark:
            return

        checked = validate_at_mirror(
            config_path,
            mirror,
            built.commit_id,
            args.objects,
            spark_partitions=args.spark_partitions,
            validator_workers=args.validator_workers,
        )

    print(f"\n{rss_line}")
    print(f"validation of {checked.ranges} ranges / {args.objects:,} objects at the mirror ({machine_load()}):")
    print(f"  in-process validator ({args.validator_workers} threads): {checked.in_process_s:8.1f} s")
    print(
        f"  Spark local[2], {args.spark_partitions} partitions, 1st call: {checked.spark_s[0]:8.1f} s"
        f"   (+ {checked.spark_startup_s:.1f}s session start)"
    )
    print(f"  Spark local[2], {args.spark_partitions} partitions, 2nd call: {checked.spark_s[1]:8.1f} s")
    print(f"  ratio Spark (2nd call) / in-process: {checked.spark_s[1] / checked.in_process_s:.2f}")


if __name__ == "__main__":
    main()
