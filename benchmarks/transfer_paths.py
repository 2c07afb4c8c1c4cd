"""Spark vs in-process object transfer: objects/s and MB/s at a few batch sizes, and the crossover.

The same source data (region-a on MinIO, ranges of at most ``--range-size`` objects, written as
``tests/spark/synthetic.py`` does) is copied into fresh namespaces of region-b (local disk) twice per
size: once by ``SparkRangeTransferer`` (local Spark, ``--master``) and once in-process (the same per-range
code, ``transfer_range``, on one ``TransferPool``, as the engine's own path runs it). Each path is modelled as
``seconds = fixed + objects / rate``; the crossover is the object count where the two lines meet, which
is what ``spark.transfer_threshold_objects`` should be set to on such a machine. Figures, no assertions.

    .venv/bin/python benchmarks/transfer_paths.py [--sizes 500,2000,5000,10000] [--master local[2]]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _environment import bench_environment, unique
from _machine import format_rate, machine_load
from lakefs_mirror_devenv import RegionSpec

from lakefs_mirror_dagster.config import SparkConfig, parse_store
from lakefs_mirror_dagster.lakefs import Commit, LakeFSClient
from lakefs_mirror_dagster.replication import RangeBatch, SyncingRef, TransferStats
from lakefs_mirror_dagster.replication.progress import ProgressReporter
from lakefs_mirror_dagster.replication.validation import read_metarange
from lakefs_mirror_dagster.spark.session import LazySparkSession, spark_session_config
from lakefs_mirror_dagster.spark.transfer import SparkRangeTransferer, TransferTarget, transfer_partition
from lakefs_mirror_dagster.storage import StoreSpec, build_blockstore
from tests.spark.synthetic import populate_big_branch

REGIONS = (RegionSpec("region-a", "s3:minio-a"), RegionSpec("region-b", "local"))


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares ``seconds = fixed + per_object * n``; returns (fixed, per_object)."""
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    slope = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx if sxx else 0.0
    return my - slope * mx, slope


def _in_process(secrets: dict[str, Any], target: TransferTarget) -> Any:
    """A Spark task's work (``transfer_partition``), run here over the whole batch."""

    def run(batch: RangeBatch, commit: Commit, stats: TransferStats, _ref: SyncingRef) -> None:
        for summary in transfer_partition(secrets, target, commit.id, batch.items()):
            summary.add_to(stats)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000,5000,10000", help="objects per batch, comma-separated")
    parser.add_argument("--range-size", type=int, default=2500, help="objects per range")
    parser.add_argument("--object-size", type=int, default=1024, help="bytes per object")
    parser.add_argument("--master", default="local[2]", help="Spark master")
    parser.add_argument("--concurrency", type=int, default=16, help="copies at once per process/task")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    print(f"[bench] {machine_load()}", flush=True)

    session = LazySparkSession(spark_session_config(SparkConfig(master=args.master), app_name="transfer-bench"))
    with bench_environment(REGIONS) as env:
        a, b = env.region("region-a"), env.region("region-b")
        client = LakeFSClient(a.endpoint, a.access_key_id, a.secret_access_key, timeout_s=900.0)
        secrets: dict[str, Any] = {
            "source_store": StoreSpec(parse_store(a.blockstore)),
            "destination_store": StoreSpec(parse_store(b.blockstore)),
        }
        started = time.monotonic()
        session().sparkContext.parallelize([1, 2], 2).count()
        print(f"[bench] Spark session ({args.master}) started in {time.monotonic() - started:.1f}s", flush=True)
        results: dict[str, list[tuple[int, float]]] = {"spark": [], "in_process": []}
        try:
            for n in sizes:
                repo = unique("xfer")
                ns = a.namespace_for(repo)
                client.create_repository(repo, ns)
                ranges = max(1, -(-n // args.range_size))
                commit, _ = populate_big_branch(
                    client,
                    env.minio["minio-a"],
                    repo,
                    ns,
                    "big",
                    ranges=ranges,
                    per_range=-(-n // ranges),
                    size=args.object_size,
                )
                range_ids = read_metarange(build_blockstore(a.blockstore), ns, commit.metarange_id)
                for path in ("in_process", "spark"):
                    target = TransferTarget(
                        repository=repo,
                        source_namespace=ns,
                        destination_namespace=b.namespace_for(f"{repo}-{path}"),
                        concurrency=args.concurrency,
                    )
                    transferer: Any = (
                        SparkRangeTransferer(session, secrets, target, max_partitions=8)
                        if path == "spark"
                        else _in_process(secrets, target)
                    )
                    stats = TransferStats()
                    t0 = time.monotonic()
                    ref = SyncingRef(f"benchmark {path}", ProgressReporter(repo))
                    transferer(dict.fromkeys(range_ids, ()), commit, stats, ref)
                    seconds = time.monotonic() - t0
                    assert stats.failed_object_count == 0, stats.failed_objects
                    results[path].append((stats.objects_copied, seconds))
                    rate = stats.objects_copied / seconds
                    print(
                        f"  {path:10} {stats.objects_copied:6} objects in {len(range_ids)} range(s): {seconds:7.2f}s "
                        f"{rate:8.0f} objects/s {format_rate(stats.bytes_copied, seconds)}",
                        flush=True,
                    )
        finally:
            session.stop()
            client.close()

    (fs, ps), (fl, pl) = _fit(results["spark"]), _fit(results["in_process"])
    print(f"[fit] spark:      {fs:6.2f}s fixed + {1 / ps if ps > 0 else float('inf'):7.0f} objects/s")
    print(f"[fit] in-process: {fl:6.2f}s fixed + {1 / pl if pl > 0 else float('inf'):7.0f} objects/s")
    if ps < pl and fs > fl:
        print(f"[crossover] Spark is faster from about {(fs - fl) / (pl - ps):.0f} objects per batch")
    elif ps < pl:
        print("[crossover] Spark is faster at every measured size")
    else:
        print("[crossover] none: Spark was not faster per object on this machine at these sizes")
    print(f"[bench] {machine_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
