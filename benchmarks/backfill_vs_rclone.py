"""Backfill throughput of a new mirror: our engine vs ``rclone sync`` vs a plain parallel copy, same run.

Source repository in region-a (MinIO server A), mirror in region-c (MinIO server B, other credentials), so
every copy crosses servers. Per dataset (default: 10,000 x 16 KiB and 20 x 64 MiB) it prints seconds and
MB/s of payload for:

- raw:    a plain parallel boto3 GET + PUT of the repository's objects, A -> B (the store's bandwidth for
          a Python client; the ceiling for an engine that streams through this process);
- rclone: ``rclone sync`` of the repository's namespace prefix, A -> B (Go, no lakeFS);
- ours:   ``ReplicationService.sync`` of a fresh mirror (plan, copy, range files, validation, commit
          records), reading the source through region-a's lakeFS API (``api``, the default config) and
          straight from MinIO A (``direct``, with ``source_stores``).

The goal is ours/rclone >= 1.2 (throughput ratio), and the copier's CPU per object at most rclone's.
Peak RSS of the syncing process is printed as well. With ``--repeat N`` every contender runs N times, one
round after another on the same objects (ours into a fresh mirror each time); each run is printed, and the
summary shows the run of median time of each contender, the ratios between medians: on 2 shared cores the same
run moves by 5 % or more from one round to the next.

    .venv/bin/python benchmarks/backfill_vs_rclone.py [--objects 10000] [--large-objects 20] [--quick]
        [--datasets small,large] [--modes api,direct] [--transfers 16] [--repeat 1]

rclone comes from the Debian package: ``apt-get install -y rclone`` (done here when running as root).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import run_child
from _environment import MIRROR, SOURCE, bench_environment, create_mirror, service_config, split_s3_uri
from _machine import cpu_delta, format_rate, machine_load, server_cpu
from _repositories import build_repository
from _sync import format_stages, sync_in_child
from lakefs_mirror_devenv import Environment, MinioInstance

MiB = 1024 * 1024

#: Throughput of ours over rclone's in the same run (issue 17's goal).
GOAL_RATIO = 1.2


@dataclass
class Figure:
    """One copier's run: wall time, payload, and CPU seconds of the copier itself and of each server."""

    name: str
    seconds: float
    payload_bytes: int
    client_cpu: float
    server_cpu: dict[str, float] = field(default_factory=dict)
    note: str = ""

    def cpu_text(self) -> str:
        servers = ", ".join(f"{k} {v:.1f}" for k, v in sorted(self.server_cpu.items()))
        return f"CPU s: copier {self.client_cpu:.1f}; {servers}"


def ensure_rclone() -> str | None:
    """The rclone binary, installing the Debian package when we are root; None (and the command) if not."""
    found = shutil.which("rclone")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("[rclone] not found; running: apt-get install -y rclone", flush=True)
        subprocess.run(["apt-get", "install", "-y", "rclone"], check=False, capture_output=True, timeout=600)
        found = shutil.which("rclone")
    if not found:
        print("[rclone] missing: install it with `apt-get install -y rclone`; skipping the rclone figures")
    return found


def _remote_env(name: str, minio: MinioInstance) -> dict[str, str]:
    """An rclone remote defined only by environment variables (no config file is written)."""
    p = f"RCLONE_CONFIG_{name.upper()}_"
    return {
        p + "TYPE": "s3",
        p + "PROVIDER": "Minio",
        p + "ENDPOINT": minio.endpoint,
        p + "ACCESS_KEY_ID": minio.access_key,
        p + "SECRET_ACCESS_KEY": minio.secret_key,
        p + "REGION": "us-east-1",
        p + "FORCE_PATH_STYLE": "true",
    }


def list_objects(minio: MinioInstance, bucket: str, prefix: str) -> list[tuple[str, int]]:
    s3 = minio.s3_client()
    out: list[tuple[str, int]] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.extend((o["Key"], int(o["Size"])) for o in page.get("Contents", []))
    return out


def raw_copy(
    src: MinioInstance, dst: MinioInstance, src_bucket: str, prefix: str, dst_bucket: str, threads: int
) -> Figure:
    """Plain parallel GET + PUT of every data object under ``prefix``: the baseline a Python copier can reach."""
    from botocore.config import Config

    objects = [(k, s) for k, s in list_objects(src, src_bucket, prefix) if "/_lakefs/" not in k]
    cfg = Config(s3={"addressing_style": "path"}, max_pool_connections=threads * 2)
    import boto3

    def client(m: MinioInstance):  # type: ignore[no-untyped-def]
        return boto3.client(
            "s3",
            endpoint_url=m.endpoint,
            aws_access_key_id=m.access_key,
            aws_secret_access_key=m.secret_key,
            region_name="us-east-1",
            config=cfg,
        )

    s_src, s_dst = client(src), client(dst)
    target = f"raw-{uuid.uuid4().hex[:8]}/"

    def copy(item: tuple[str, int]) -> int:
        key, _ = item
        body = s_src.get_object(Bucket=src_bucket, Key=key)["Body"].read()
        s_dst.put_object(Bucket=dst_bucket, Key=target + key, Body=body)
        return len(body)

    started, cpu = time.monotonic(), time.process_time()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        copied = sum(pool.map(copy, objects))
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu
    return Figure("raw boto3 GET+PUT", seconds, copied, cpu, note=f"{len(objects)} objects, {threads} threads")


def rclone_sync(
    binary: str, src: MinioInstance, dst: MinioInstance, src_path: str, dst_path: str, transfers: int, payload: int
) -> Figure:
    # The AWS SDK inside rclone cannot apply AWS_CA_BUNDLE to rclone's own transport and refuses to start;
    # the endpoints are plain http on loopback, so no CA bundle is needed.
    env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    env.update(_remote_env("benchsrc", src))
    env.update(_remote_env("benchdst", dst))
    argv = [
        binary,
        "sync",
        f"benchsrc:{src_path}",
        f"benchdst:{dst_path}",
        "--transfers",
        str(transfers),
        "--checkers",
        str(transfers),
        "--config",
        "/dev/null",
    ]
    run = run_child(argv, env=env, what="rclone sync")
    if run.returncode != 0:
        raise RuntimeError(f"rclone failed ({run.returncode}): {run.stderr[-2000:]}")
    shown = " ".join(a if not a.startswith("bench") else a.split(":")[0] + ":…" for a in argv[1:])
    return Figure("rclone sync", run.seconds, payload, run.cpu_seconds, note=f"rclone {shown}")


def ours(env: Environment, repo: str, mode: str, payload: int, expected_objects: int) -> Figure:
    mirror = create_mirror(env, repo)
    config = service_config(env, MIRROR, direct_source=SOURCE if mode == "direct" else None)
    child = sync_in_child(config, mirror)
    copied = child.result["objects_copied"]
    if copied != expected_objects:
        raise RuntimeError(f"mirror {mirror}: copied {copied} objects, expected {expected_objects}")
    note = (
        f"peak RSS {child.peak_rss_bytes / MiB:.0f} MiB, process wall {child.seconds:.1f}s (sync timed inside: "
        f"{format_stages(child.result['stages'])})"
    )
    return Figure(f"ours ({mode} source)", child.result["seconds"], payload, child.cpu_seconds, note=note)


def measured(env: Environment, run: Callable[[], Figure]) -> Figure:
    """``run()`` with the CPU each server spent meanwhile attached."""
    before = server_cpu(env)
    figure = run()
    figure.server_cpu = cpu_delta(before, server_cpu(env))
    print(f"  measured {figure.name}: {figure.seconds:.1f}s ({machine_load()})", flush=True)
    return figure


def median_run(figures: list[Figure]) -> Figure:
    """The run of median time (the lower middle one of an even count)."""
    return sorted(figures, key=lambda f: f.seconds)[(len(figures) - 1) // 2]


def run_dataset(
    env: Environment,
    label: str,
    objects: int,
    size: int,
    modes: list[str],
    transfers: int,
    rclone: str | None,
    repeat: int = 1,
) -> None:
    print(f"\n=== {label}: {objects:,} objects x {size:,} B = {objects * size / 1e6:,.1f} MB ({machine_load()})")
    built = build_repository(env, SOURCE, objects=objects, object_size=size, threads=transfers)
    src, dst = env.minio["minio-a"], env.minio["minio-c"]
    src_bucket, src_prefix = split_s3_uri(built.namespace)
    dst_bucket, _ = split_s3_uri(env.region(MIRROR).namespace_root + "/x")
    payload = built.total_bytes
    runs: dict[str, list[Figure]] = {}

    def record(figure: Figure) -> None:
        runs.setdefault(figure.name, []).append(figure)

    for _ in range(repeat):
        record(measured(env, lambda: raw_copy(src, dst, src_bucket, src_prefix + "/", dst_bucket, transfers)))
        if rclone:
            src_path, dst_path = f"{src_bucket}/{src_prefix}", f"{dst_bucket}/rclone-{uuid.uuid4().hex[:8]}"
            sync = functools.partial(rclone_sync, rclone, src, dst, src_path, dst_path, transfers, payload)
            record(measured(env, sync))
        for mode in modes:
            record(measured(env, functools.partial(ours, env, built.name, mode, payload, objects)))
    figures = [median_run(each) for each in runs.values()]
    print(f"\n  {label}: {objects:,} x {size:,} B" + (f", run of median time of {repeat}" if repeat > 1 else ""))
    for f in figures:
        print(f"  {f.name:<22} {f.seconds:8.1f} s {format_rate(f.payload_bytes, f.seconds)}   {f.note}")
        print(f"  {'':<22} {f.cpu_text()}")
        if repeat > 1:
            print(f"  {'':<22} runs: {', '.join(f'{r.seconds:.1f}' for r in runs[f.name])} s")
    base = {f.name: f for f in figures}
    for f in figures:
        if f.name.startswith("ours"):
            if "rclone sync" in base:
                ratio = base["rclone sync"].seconds / f.seconds
                verdict = "meets" if ratio >= GOAL_RATIO else "misses"
                print(f"  ratio {f.name} / rclone (throughput): {ratio:.2f}  ({verdict} goal >= {GOAL_RATIO})")
            print(f"  ratio {f.name} / raw copy (throughput): {base['raw boto3 GET+PUT'].seconds / f.seconds:.2f}")
    print(f"  ({machine_load()})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000, help="objects of the small dataset")
    parser.add_argument("--small-size", type=int, default=16 * 1024, help="bytes per small object")
    parser.add_argument("--large-objects", type=int, default=20, help="objects of the large dataset")
    parser.add_argument("--large-size", type=int, default=64 * MiB, help="bytes per large object")
    parser.add_argument("--quick", action="store_true", help="1,000 small and 4 large objects")
    parser.add_argument("--datasets", default="small,large", help="comma-separated: small, large")
    parser.add_argument("--modes", default="api,direct", help="engine source modes: api, direct")
    parser.add_argument("--transfers", type=int, default=16, help="threads of rclone and the raw copy (engine: 16)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every contender; the summary takes medians")
    args = parser.parse_args()
    if args.quick:
        args.objects, args.large_objects = min(args.objects, 1000), min(args.large_objects, 4)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if bad := [d for d in datasets if d not in ("small", "large")] + [m for m in modes if m not in ("api", "direct")]:
        parser.error(f"unknown dataset or mode: {', '.join(bad)}")
    if min(args.objects, args.large_objects, args.small_size, args.large_size, args.transfers, args.repeat) < 1:
        parser.error("counts and sizes must be at least 1")
    rclone = ensure_rclone()
    print(f"start: {machine_load()}")
    with bench_environment() as env:
        if "small" in datasets:
            run_dataset(env, "small objects", args.objects, args.small_size, modes, args.transfers, rclone, args.repeat)
        if "large" in datasets:
            run_dataset(
                env, "large objects", args.large_objects, args.large_size, modes, args.transfers, rclone, args.repeat
            )


if __name__ == "__main__":
    main()
