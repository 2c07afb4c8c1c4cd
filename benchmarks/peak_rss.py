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
        [--no-spark]

The large cases need about 2.5 GB free in the temp dir and in MinIO's data directory (``huge``) and skip
validation (``--no-spark`` is implied).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _fixtures as fx

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.replication import ReplicationService, in_process_validator, read_metarange
from lakefs_mirror_dagster.replication.service import store_spec
from lakefs_mirror_dagster.spark.validation import SparkRangeValidator

MiB = 1024 * 1024
GiB = 1024 * MiB
GB = 1_000_000_000
#: case -> (objects, object size, RSS goal in bytes, goal as printed)
CASES: dict[str, tuple[int, int, int, str]] = {
    "200k": (200_000, 1024, GB, "1 GB"),
    "large20": (20, 64 * MiB, 512 * MiB, "512 MiB"),
    "huge": (1, 2 * GiB, 512 * MiB, "512 MiB"),
}


def local_spark(warehouse: Path) -> Any:
    """A local-mode SparkSession on loopback, built like the test suite's ``spark`` fixture."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers must import this package
    return (
        SparkSession.builder.master("local[2]")
        .appName("lakefs-mirror-bench")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )


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
    print(f"start: {fx.machine_load()}")
    with fx.bench_environment() as env:
        built = fx.build_repository(
            env, fx.SOURCE, objects=args.objects, object_size=args.object_size, threads=args.threads
        )
        mirror = fx.create_mirror(env, built.name)
        config_path = fx.service_config(env, fx.MIRROR, direct_source=fx.SOURCE if args.source == "direct" else None)
        print(f"[backfill] mirroring {args.objects:,} objects in a child process ({fx.machine_load()})", flush=True)
        child = fx.sync_in_child(config_path, mirror)
        if child.result["objects_copied"] != args.objects:
            raise RuntimeError(f"backfill copied {child.result['objects_copied']} objects, expected {args.objects}")
        verdict = "meets" if child.peak_rss_bytes <= goal else "misses"
        rss_line = (
            f"peak RSS of the backfill of {args.objects:,} x {args.object_size:,} B (case {args.case}, source "
            f"{args.source}): {child.peak_rss_bytes / MiB:,.0f} MiB ({child.peak_rss_bytes / GB:.2f} GB, {verdict} "
            f"goal <= {goal_text}); sync {child.result['seconds']:.1f}s, {child.result['ranges_validated']} ranges "
            f"({fx.machine_load()})"
        )
        print(rss_line, flush=True)
        if args.no_spark:
            return

        service = ReplicationService(load_config(config_path, env={}))
        try:
            record = next(service.my_mirrors(name=mirror))
            store = service.destination_store(record.storage_id)
            commit = service.client(fx.MIRROR).get_commit(mirror, built.commit_id)
            range_ids = read_metarange(store, record.storage_namespace, commit.metarange_id)
            print(f"[validate] commit {built.commit_id[:12]}: {len(range_ids)} ranges", flush=True)

            validate = in_process_validator(
                store, record.storage_namespace, workers=args.validator_workers, strict=False
            )
            started = time.monotonic()
            local_results = validate(dict.fromkeys(range_ids, ()))
            in_process_s = time.monotonic() - started
            checked = sum(r.objects for r in local_results)
            if not all(r.ok for r in local_results) or checked != args.objects:
                raise RuntimeError(f"in-process validation: {checked} objects, ok={[r.ok for r in local_results]}")
            print(f"[validate] in-process: {in_process_s:.1f}s ({fx.machine_load()})", flush=True)

            settings = store_spec(service.config, service.config.store_by_id(record.storage_id))
            with tempfile.TemporaryDirectory(prefix="bench-spark-") as warehouse:
                started = time.monotonic()
                spark = local_spark(Path(warehouse))
                startup_s = time.monotonic() - started
                try:
                    spark_times = []
                    for _ in range(2):  # the first call also starts the Python workers
                        validator = SparkRangeValidator(
                            lambda: spark,
                            settings,
                            record.storage_namespace,
                            strict_full_addresses=False,
                            num_partitions=args.spark_partitions,
                        )
                        started = time.monotonic()
                        spark_results = validator(dict.fromkeys(range_ids, ()))
                        spark_times.append(time.monotonic() - started)
                        if [(r.range_id, r.ok, r.objects) for r in spark_results] != [
                            (r.range_id, r.ok, r.objects) for r in local_results
                        ]:
                            raise RuntimeError("Spark and in-process validation disagree")
                finally:
                    spark.stop()
        finally:
            service.close()

    print(f"\n{rss_line}")
    print(f"validation of {len(range_ids)} ranges / {args.objects:,} objects at the mirror ({fx.machine_load()}):")
    print(f"  in-process validator ({args.validator_workers} threads): {in_process_s:8.1f} s")
    print(
        f"  Spark local[2], {args.spark_partitions} partitions, 1st call: {spark_times[0]:8.1f} s"
        f"   (+ {startup_s:.1f}s session start)"
    )
    print(f"  Spark local[2], {args.spark_partitions} partitions, 2nd call: {spark_times[1]:8.1f} s")
    print(f"  ratio Spark (2nd call) / in-process: {spark_times[1] / in_process_s:.2f}")


if __name__ == "__main__":
    main()
