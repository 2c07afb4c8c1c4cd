"""A new mirror of a repository with 200 branches, converged by the Dagster daemon alone, runs in parallel.

Starts a throwaway environment (source in region-a on MinIO A, mirror in region-c on MinIO B), a source
repository with one commit on ``main`` and ``--branches`` branches, each with one object of its own (written
through lakeFS's S3 gateway) and a commit. The mirror is created and activated, then ``dagster-daemon run -w
workspace.yaml`` runs with a queued run coordinator capped at ``--max-concurrent-runs`` and the default run
launcher (a subprocess per run) until every mirror branch equals its source head. What it did is read back
from the Dagster instance (``lakefs_mirror_devenv.dagster_daemon``, the same code the test uses).

    .venv/bin/python benchmarks/dagster_branches.py [--branches 200] [--max-concurrent-runs 4] [--interval 5s]
        [--timeout 3600] [--sensor-workers 4] [--launcher fork|default] [--json out.json]

Goals: converged; one run per branch, each branch materialized once for its source head; no duplicate run
key nor (branch, source commit) requested twice; at least 2 runs in flight at once and never more than the
limit. Exits 1 when a goal is missed (the Dagster instance and the daemon's log are then kept).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _fixtures import MIRROR, REPO_ROOT, SOURCE, _admin, bench_environment, create_mirror, machine_load, service_config
from lakefs_mirror_devenv.branch_fanout import fan_out_branches
from lakefs_mirror_devenv.dagster_daemon import Convergence, converge_mirror, stage_table
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.config import load_config, parse_duration
from lakefs_mirror_dagster.orchestration.mirroring import reconcile_mirrors
from lakefs_mirror_dagster.replication import ReplicationService

REPO = "dagbranches"


def goals(result: Convergence, heads: dict[str, str], limit: int) -> list[tuple[str, str, bool]]:
    """(what, measured, met) for each goal."""
    a = result.audit
    once = sum(1 for b, h in heads.items() if a.materialized.get(b) == 1 and a.materialized_commits.get(b) == h)
    return [
        ("converged (every mirror head = source head)", f"{len(heads) - len(result.lagging)}/{len(heads)}",
         result.converged),
        ("runs launched = branches", f"{a.runs} runs for {len(heads)} branches", a.runs == len(heads)),
        ("runs succeeded", f"{a.succeeded}/{a.runs}", a.succeeded == a.runs),
        ("each branch materialized once, for its head", f"{once}/{len(heads)}", once == len(heads)),
        ("duplicate run keys = 0", str(len(a.duplicate_run_keys)), not a.duplicate_run_keys),
        ("(branch, source commit) requested twice = 0", str(len(a.duplicate_requests)), not a.duplicate_requests),
        (f"runs in flight at once: 2 <= max <= {limit}", str(a.max_parallel), 2 <= a.max_parallel <= limit),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--branches", type=int, default=200)
    parser.add_argument("--max-concurrent-runs", type=int, default=4, help="the run queue's limit (dagster.yaml)")
    parser.add_argument("--interval", default="5s", help="commit_sensor.process_branches_duration (default 5s)")
    parser.add_argument(
        "--sensor-workers",
        type=int,
        default=4,
        help="the sensor daemon's threads, and its run-submit threads (dagster.yaml sensors); 0: Dagster's default",
    )
    parser.add_argument(
        "--launcher",
        choices=("fork", "default"),
        default="fork",
        help="fork: runs start as forks of a warm process (ForkRunLauncher); default: Dagster's, a new interpreter",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds the daemon may take to converge")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    if args.branches < 1 or args.max_concurrent_runs < 1 or args.timeout <= 0 or args.sensor_workers < 0:
        parser.error("--branches and --max-concurrent-runs must be >= 1, --timeout > 0, --sensor-workers >= 0")
    work = Path(tempfile.mkdtemp(prefix="lakefs-mirror-dagbranches-"))
    with bench_environment() as env:
        region = env.region(SOURCE)
        client, gateway = _admin(region), region.s3_gateway_client()
        client.create_repository(REPO, region.namespace_for(REPO))
        gateway.put_object(Bucket=REPO, Key="main/tables/t/part-0.json", Body=b'{"row": 0}')
        heads = {"main": client.commit(REPO, "main", "first").id}
        started = time.monotonic()
        heads.update(fan_out_branches(client, gateway, REPO, [f"b{i:04}" for i in range(args.branches)], workers=8))
        print(f"[build] {args.branches} branches, one commit each, in {time.monotonic() - started:.1f}s", flush=True)
        name = create_mirror(env, REPO)
        config = config_variant(
            service_config(env, MIRROR),
            work / "replication-daemon.yaml",
            commit_sensor={"process_branches_duration": args.interval},
        )
        service = ReplicationService(load_config(config, env={}))
        try:
            reconcile_mirrors(service)  # what the manager sensor does before the mirror has assets
        finally:
            service.close()
        print(
            f"[daemon] max_concurrent_runs {args.max_concurrent_runs}, sensor every {args.interval}, "
            f"sensor workers {args.sensor_workers}, {args.launcher} launcher; DAGSTER_HOME {work / 'dagster_home'}",
            flush=True,
        )
        result = converge_mirror(
            work / "dagster_home",
            workspace=REPO_ROOT / "workspace.yaml",
            replication_config=config,
            mirror=name,
            source=client,
            source_repository=REPO,
            destination=_admin(env.region(MIRROR)),
            max_concurrent_runs=args.max_concurrent_runs,
            timeout_s=args.timeout,
            settle_s=2 * parse_duration(args.interval).total_seconds(),
            sensor_workers=args.sensor_workers or None,
            fork_runs=args.launcher == "fork",
        )

    a = result.audit
    print(f"\n{len(heads)} branches ({args.branches} + main) under dagster-daemon; {machine_load()}")
    print(f"  daemon start -> converged     {result.seconds:8.1f} s")
    print(f"  first run created -> last end {a.seconds:8.1f} s ({a.runs / max(a.seconds, 1e-9) * 60:.1f} runs/min)")
    print(f"  runs created                  {a.created_per_minute:8.1f} a minute (first to last creation)")
    print(f"  commit sensor: {a.tick_times.summary()}")
    print(f"  where a run's time goes (median / max over {len(a.stages)} run(s)):")
    print("\n".join(stage_table(a.stages)))
    print(f"  sensor ticks {a.ticks}; run requests repeated while that run was queued or running, skipped by key: "
          f"{a.rerequested_in_flight}")  # fmt: skip
    table = goals(result, heads, args.max_concurrent_runs)
    for what, measured, met in table:
        print(f"  {what:48} {measured:>24}  {'met' if met else 'MISSED'}")
    ok = all(met for _, _, met in table)
    if args.json:
        audit = {f.name: getattr(a, f.name) for f in fields(a)}  # asdict() would turn Counters into tuple keys
        figures = {"branches": args.branches, "seconds": result.seconds, "audit": audit, "load": machine_load()}
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  kept {work} (daemon log: {work / 'dagster_home' / 'dagster-daemon.log'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
