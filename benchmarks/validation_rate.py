"""Validation of N objects in directories of 50,000: MinIO's own listing rate against our validators', in objects/s.

Builds ``--objects`` objects of ``--object-size`` bytes in one region with the ranges builder (``_ranges_build.py``:
objects at ``data/<partition>/<id>``, a new partition every 50,000, as lakeFS's upload paths; range files and a
metarange as lakeFS writes them), then, on that repository's own storage namespace (validation reads only the
range files and the objects, so no mirror and no backfill are needed):

1. **raw listings** of ``data/``: obstore (``list``, 1,000 keys a page), boto3 ``list_objects_v2`` (asking
   for 1,000 and for 10,000 keys a page: S3 sends at most 1,000), and obstore split into ``--split`` key spans
   listed at once (``StartAfter`` at each span's first key); each with wall seconds, this process's CPU and
   MinIO's.
2. **our validators**, in a child process per tree (each ``--baseline TREE``, then this one) so all read the
   same objects in the same run: ``in_process_validator`` (``--validator-workers`` threads) and ``SparkRangeValidator``
   on ``local[2]`` (second call; the first also starts Spark's Python workers), with the child's CPU (the Spark
   workers' too) and MinIO's. ``--profile`` first validates the ranges one after another in one thread
   under cProfile and prints its top functions.

Each figure is printed as objects/s next to the goal (1,000,000 objects in <= 60 s: 16,667 objects/s) and the
load average, with what 1,000,000 objects would take at that rate.

    .venv/bin/python benchmarks/validation_rate.py [--objects 50000] [--baseline /tmp/base-tree] [--no-spark]
        [--split 4] [--validator-workers 3] [--spark-partitions 3] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
GOAL_OBJECTS = 1_000_000
GOAL_S = 60.0
CHILD_TIMEOUT_S = 3600


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (0.0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it (Spark's JVM and its Python workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def _tree_cpu(pid: int) -> dict[int, float]:
    return {p: _proc_cpu(p) for p in _descendants(pid)}


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


class Measure:
    """Wall seconds, CPU seconds of this process (with ``descendants``: and of the processes below it, Spark's)
    and of MinIO across a block."""

    def __init__(self, minio_pid: int, *, descendants: bool = True) -> None:
        self.minio_pid = minio_pid
        self.descendants = descendants

    def _cpu_now(self) -> dict[int, float]:
        pid = os.getpid()
        return _tree_cpu(pid) if self.descendants else {pid: _proc_cpu(pid)}

    def __enter__(self) -> Measure:
        self._cpu = self._cpu_now()
        self._minio = _proc_cpu(self.minio_pid)
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        after = self._cpu_now()
        # a process that ended in between counts as 0 after; one that started counts from 0
        self.cpu = sum(max(0.0, c - self._cpu.get(p, 0.0)) for p, c in after.items())
        self.minio_cpu = _proc_cpu(self.minio_pid) - self._minio

    def figures(self, objects: int) -> dict[str, float]:
        return {"objects": objects, "wall": self.wall, "cpu": self.cpu, "minio_cpu": self.minio_cpu}


# -- the child: one tree's validators ---------------------------------------------------------------------


def _child(spec: dict[str, Any]) -> None:
    """Runs with the tree under test first on the path: validate every range of the commit, print one JSON line."""
    from lakefs_mirror_dagster.config import load_config
    from lakefs_mirror_dagster.region import ReplicationService
    from lakefs_mirror_dagster.region.service import store_spec
    from lakefs_mirror_dagster.replication import in_process_validator, read_metarange

    service = ReplicationService(load_config(Path(spec["config"]), env={}))
    out: dict[str, Any] = {"package": str(Path(sys.modules["lakefs_mirror_dagster"].__file__ or "").parent)}
    try:
        store = service.destination_store("")
        namespace = spec["namespace"]
        range_ids = read_metarange(store, namespace, spec["metarange_id"])
        batch = dict.fromkeys(range_ids, ())
        out["ranges"] = len(range_ids)

        def check(results: list[Any], where: str) -> int:
            objects = sum(r.objects for r in results)
            if objects != spec["objects"] or not all(r.ok for r in results):
                raise SystemExit(f"{where}: {objects} objects, ok={[r.ok for r in results]}")
            return objects

        validate = in_process_validator(store, namespace, workers=spec["validator_workers"], strict=False)
        validate(dict.fromkeys(range_ids[:0], ()))  # nothing: imports done before the clock starts
        if spec["profile"]:  # cProfile sees one thread: the ranges one after another in this one
            import cProfile
            import io
            import pstats

            from lakefs_mirror_dagster.replication import validate_range

            profiler = cProfile.Profile()
            with Measure(spec["minio_pid"]) as m:
                profiler.enable()
                objects = check([validate_range(store, namespace, rid) for rid in range_ids], "profiled")
                profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(20)
            print(text.getvalue(), file=sys.stderr)
            out["profiled"] = m.figures(objects)
        with Measure(spec["minio_pid"]) as m:
            objects = check(validate(batch), "in-process")
        out["in_process"] = m.figures(objects)
        if spec["spark"]:
            out.update(_spark_figures(spec, service, store_spec, range_ids, check))
    finally:
        service.close()
    print(json.dumps(out))


def _spark_figures(
    spec: dict[str, Any], service: Any, store_spec: Callable[..., Any], range_ids: list[str], check: Callable[..., int]
) -> dict[str, Any]:
    from lakefs_mirror_dagster.spark.validation import SparkRangeValidator

    sys.path.insert(1, str(Path(__file__).resolve().parent))  # after the tree under test: _spark imports nothing of it
    from _spark import local_spark

    settings = store_spec(service.config, service.config.store_by_id(""))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as warehouse:
        spark = local_spark(Path(warehouse))
        try:
            for call in ("spark_1st", "spark"):
                validator = SparkRangeValidator(
                    lambda: spark,
                    settings,
                    spec["namespace"],
                    strict_full_addresses=False,
                    num_partitions=spec["spark_partitions"],
                )
                with Measure(spec["minio_pid"]) as m:
                    objects = check(validator(dict.fromkeys(range_ids, ())), call)
                out[call] = m.figures(objects)
        finally:
            spark.stop()
    return out


def _run_tree(tree: Path, spec: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'devenv'}"}
    env.pop("PYSPARK_PYTHON", None)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        env=env,
        cwd=tree,
        stdout=subprocess.PIPE,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child for {tree} failed ({proc.returncode})")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


# -- raw listings --------------------------------------------------------------------------------------------


def _obstore_keys(store: Any, prefix: str, after: str | None = None, upto: str | None = None) -> Iterator[str]:
    import obstore

    for chunk in obstore.list(store, prefix, offset=after, chunk_size=1000):
        for meta in chunk:
            if upto is not None and meta["path"] > upto:
                return
            yield meta["path"]


def _raw_listings(built: Any, minio: Any, split: int) -> dict[str, dict[str, float]]:
    """MinIO listing ``data/`` of the repository's namespace, three ways (see the module doc)."""
    import boto3
    from _ranges_build import _store

    store = _store(built.namespace, minio.endpoint, minio.access_key, minio.secret_key)
    out: dict[str, dict[str, float]] = {}
    with Measure(minio.pid, descendants=False) as m:
        keys = list(_obstore_keys(store, "data/"))
    out["obstore, 1,000 a page"] = m.figures(len(keys))

    bucket, _, root = built.namespace.removeprefix("s3://").partition("/")
    client = boto3.client(
        "s3",
        endpoint_url=minio.endpoint,
        aws_access_key_id=minio.access_key,
        aws_secret_access_key=minio.secret_key,
        region_name="us-east-1",
    )
    for asked in (1000, 10_000):  # S3 sends at most 1,000 a page; does this MinIO send more?
        with Measure(minio.pid, descendants=False) as m:
            listed = pages = 0
            for page in client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=f"{root.strip('/')}/data/", PaginationConfig={"PageSize": asked}
            ):
                listed, pages = listed + len(page.get("Contents", [])), pages + 1
        out[f"boto3, {asked:,} asked: {pages} pages"] = m.figures(listed)

    # split the key space at every len/split-th key: span i lists after bounds[i] up to bounds[i + 1]
    bounds: list[str | None] = [None, *(keys[len(keys) * i // split - 1] for i in range(1, split)), None]

    def span(i: int) -> int:
        return sum(1 for _ in _obstore_keys(store, "data/", after=bounds[i], upto=bounds[i + 1]))

    with Measure(minio.pid, descendants=False) as m, ThreadPoolExecutor(max_workers=split) as pool:
        listed = sum(pool.map(span, range(split)))
    out[f"obstore, {split} spans at once"] = m.figures(listed)
    return out


def _line(label: str, f: dict[str, float]) -> str:
    rate = f["objects"] / f["wall"] if f["wall"] > 0 else float("inf")
    million_s = GOAL_OBJECTS / rate if rate else float("inf")
    goal = GOAL_OBJECTS / GOAL_S
    verdict = "meets" if rate >= goal else "misses"
    return (
        f"  {label:34} {f['objects']:9,.0f} objects {f['wall']:7.1f} s {rate:9,.0f} objects/s "
        f"({verdict} goal {goal:,.0f}/s; 1M: {million_s:6.0f} s)  CPU ours {f['cpu']:6.1f} s, MinIO "
        f"{f['minio_cpu']:6.1f} s"
    )


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(json.loads(sys.argv[2]))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _environment import bench_environment, service_config
    from _machine import machine_load
    from _repositories import build_repository
    from lakefs_mirror_devenv import RegionSpec

    from lakefs_mirror_dagster.lakefs import LakeFSClient

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=50_000, help="objects in the repository")
    parser.add_argument("--object-size", type=int, default=1024, help="bytes per object")
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="a tree to measure too, before this one (its package root; repeatable)",
    )
    parser.add_argument("--split", type=int, default=4, help="key spans of the split raw listing")
    parser.add_argument("--validator-workers", type=int, default=3, help="threads of the in-process validator")
    parser.add_argument("--spark-partitions", type=int, default=3, help="as validator.num_workers on Dagster")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark validator")
    parser.add_argument("--profile", action="store_true", help="cProfile the in-process validator (slower)")
    args = parser.parse_args()
    if min(args.objects, args.object_size, args.split, args.validator_workers, args.spark_partitions) < 1:
        parser.error("counts and sizes must be at least 1")
    trees = {**{tree.resolve().name: tree.resolve() for tree in args.baseline}, "this tree": HERE}
    print(f"start: {machine_load()}", flush=True)
    with bench_environment((RegionSpec("region-a", "s3:minio-a"),)) as env:
        region = env.region("region-a")
        assert region.minio is not None
        minio = env.minio[region.minio]
        built = build_repository(
            env, "region-a", objects=args.objects, object_size=args.object_size, method="ranges"
        )
        client = LakeFSClient(region.endpoint, region.access_key_id, region.secret_access_key)
        try:
            metarange_id = client.get_commit(built.name, built.commit_id).metarange_id
        finally:
            client.close()
        print(
            f"\nvalidation of {built.objects:,} objects in data directories of 50,000 ({machine_load()})", flush=True
        )
        for label, f in _raw_listings(built, minio, args.split).items():
            print(_line(f"raw list: {label}", f), f"[{_load()}]", flush=True)
        spec = {
            "config": str(service_config(env, "region-a")),
            "namespace": built.namespace,
            "metarange_id": metarange_id,
            "objects": built.objects,
            "minio_pid": minio.pid,
            "validator_workers": args.validator_workers,
            "spark_partitions": args.spark_partitions,
            "spark": not args.no_spark,
            "profile": args.profile,
        }
        for label, tree in trees.items():
            figures = _run_tree(tree, spec)
            print(f"  {label}: {figures['package']}, {figures['ranges']} ranges", flush=True)
            for key, name in (
                ("profiled", "one thread, cProfile"),
                ("in_process", "in-process"),
                ("spark_1st", "Spark local[2], 1st"),
                ("spark", "Spark local[2]"),
            ):
                if key in figures:
                    print(_line(f"{label}: {name}", figures[key]), f"[{_load()}]", flush=True)
    print(f"end: {machine_load()}")


if __name__ == "__main__":
    main()
