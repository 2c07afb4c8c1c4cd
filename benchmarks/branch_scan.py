"""A source repository with 1,000 branches: the sync passes that create, re-scan and advance them, and what
``commit_sensor.branches_scanner_concurrency_limit`` buys, in one run.

Starts a throwaway environment (source in region-a on MinIO A, mirrors in region-c on MinIO B), builds a
source repository with a few objects on ``main``, then ``--branches`` branches from it, and two mirrors of it:
one synced with one branch at a time (``branches_scanner_concurrency_limit: 1``, the baseline), one with
``--workers`` (default 10, the reference's default). For each mirror, alternating which goes first:

- ``first``: the pass that creates every branch at the mirror (one commit copied, then a branch per branch);
- ``rescan``: a pass with nothing new (listing and comparing heads only, what every sensor tick costs);
- ``advance``: after one new commit on each of ``--changed`` branches, the pass that mirrors them.

    .venv/bin/python benchmarks/branch_scan.py [--branches 1000] [--changed 100] [--workers 10] [--json out.json]

Goals: ``rescan`` of 1,000 branches <= 5 s; ``advance`` with ``--workers`` at least 1.5x faster than with 1.
Exits 1 when a pass fails or a mirror's heads differ from the source's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _environment import MIRROR, SOURCE, admin_client, bench_environment, create_mirror, service_config
from _machine import machine_load
from _repositories import build_repository
from _sync import run_sync

GOAL_RESCAN_S = 5.0
GOAL_SPEEDUP = 1.5


def config_with_workers(base: Path, workers: int) -> Path:
    """A copy of the mirror region's config with ``branches_scanner_concurrency_limit: workers``."""
    data = yaml.safe_load(base.read_text())
    data.setdefault("commit_sensor", {})["branches_scanner_concurrency_limit"] = workers
    out = base.with_name(f"{base.stem}-workers-{workers}.yaml")
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    out.chmod(0o600)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--branches", type=int, default=1000)
    parser.add_argument("--changed", type=int, default=100, help="branches that get a new commit before 'advance'")
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, float]] = {}
    ok = True
    with bench_environment() as env:
        source = build_repository(env, SOURCE, objects=20, object_size=1024)
        client = admin_client(env.region(SOURCE))
        names = [f"b{i:05}" for i in range(args.branches)]
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda n: client.create_branch(source.name, n, "main"), names))
        print(f"[build] {args.branches} branches in {time.monotonic() - started:.1f}s", flush=True)
        base = service_config(env, MIRROR)
        mirrors = {
            workers: (create_mirror(env, source.name), config_with_workers(base, workers))
            for workers in (1, args.workers)
        }

        def each_mirror(phase: str, order: list[int]) -> None:
            nonlocal ok
            for workers in order:
                name, config = mirrors[workers]
                seconds, result, _reads = run_sync(config, name)
                figures.setdefault(phase, {})[str(workers)] = seconds
                synced = sum(1 for r in result.refs if r.action != "unchanged")
                print(f"[{phase}] workers {workers:3}: {seconds:7.2f}s, {len(result.refs)} refs, {synced} moved",
                      flush=True)  # fmt: skip

        each_mirror("first", [1, args.workers])
        each_mirror("rescan", [args.workers, 1])
        for n in names[: args.changed]:
            client.upload_object(source.name, n, f"changed/{n}.txt", n.encode())
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda n: client.commit(source.name, n, f"change on {n}"), names[: args.changed]))
        each_mirror("advance", [1, args.workers])

        source_heads = {b.id: b.commit_id for b in client.list_branches(source.name)}
        for workers, (name, _config) in mirrors.items():
            mirror_heads = {b.id: b.commit_id for b in admin_client(env.region(MIRROR)).list_branches(name)}
            if mirror_heads != source_heads:
                ok = False
                differing = sorted(k for k in source_heads.keys() | mirror_heads.keys()
                                   if source_heads.get(k) != mirror_heads.get(k))  # fmt: skip
                print(f"!! mirror with {workers} worker(s) differs from the source on {len(differing)} branches, "
                      f"e.g. {differing[:5]}")  # fmt: skip

    print(f"\n{args.branches} branches ({args.changed} changed before 'advance'); {machine_load()}")
    print(f"{'pass':8} {'1 worker':>10} {str(args.workers) + ' workers':>11}  {'ratio':>6}  goal")
    for phase, by in figures.items():
        one, many = by["1"], by[str(args.workers)]
        ratio = one / many if many else float("inf")
        goal = {
            "rescan": f"<= {GOAL_RESCAN_S:.0f} s: {'met' if many <= GOAL_RESCAN_S else 'MISSED'}",
            "advance": f"ratio >= {GOAL_SPEEDUP}: {'met' if ratio >= GOAL_SPEEDUP else 'MISSED'}",
        }.get(phase, "-")
        print(f"{phase:8} {one:9.2f}s {many:10.2f}s  {ratio:5.2f}x  {goal}")
    if args.json:
        payload: dict[str, Any] = {"branches": args.branches, "changed": args.changed, "figures": figures}
        args.json.write_text(json.dumps(payload, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
