"""A new mirror of a repository with 200 branches, converged under the Dagster daemon: by the commit sensor (runs in
parallel), or by one backfill launched as from the UI, against ``lakefs-mirror sync --once``.

Starts a throwaway environment (source in region-a on MinIO A, mirror in region-c on MinIO B), a source
repository with one commit on ``main`` and ``--branches`` branches, each with one object of its own (written
through lakeFS's S3 gateway) and a commit. The mirror is created and activated, then, by ``--mode``:

- ``sensor`` (the default): ``dagster-daemon run -w workspace.yaml`` runs with a queued run coordinator capped at
  ``--max-concurrent-runs`` (``--launcher``: forks of a warm process, or Dagster's subprocess per run) until
  every mirror branch equals its source head; the commit sensor requests a run per branch.
- ``backfill``: a webserver stops the mirror's commit sensor, every branch partition is added, the daemon starts,
  and the webserver's ``launchPartitionBackfill`` (the UI's "Materialize" dialog) asks for all of them; the
  asset's ``BackfillPolicy.single_run`` makes that one run, which syncs the branches on the engine's branch
  workers (``--launcher`` and ``--max-concurrent-runs`` apply as in ``sensor``). Timed from the launch to the
  run's end (the mirror converged) and to the backfill shown done (Dagster's backfill daemon looks every 30 s).
  Then, in the same environment, ``lakefs-mirror sync --once`` of a second, fresh mirror of the same repository
  with the same config: the baseline.

What the daemon did is read back from the Dagster instance (``lakefs_mirror_devenv.dagster_audit``, the same code
the tests use).

    .venv/bin/python benchmarks/dagster_branches.py [--mode sensor|backfill] [--branches 200]
        [--max-concurrent-runs 4] [--interval 5s] [--timeout 3600] [--sensor-workers 4] [--launcher fork|default]
        [--json out.json]

Goals (sensor): converged; one run per branch, each branch materialized once for its source head; no duplicate
run key nor (branch, source commit) requested twice; at least 2 runs in flight at once and never more than the
limit. Goals (backfill): the backfill succeeded with 1 run and no other run; each branch materialized once for its
source head; both mirrors equal the source; backfill (launch to run end) / ``sync --once`` <= 1.5. Exits 1 when a
goal is missed (the Dagster instance and the daemon's and webserver's logs are then kept).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _child import ChildRun, run_child
from _environment import MIRROR, SOURCE, admin_client, bench_environment, create_mirror, service_config
from _machine import machine_load
from _tree import REPO_ROOT
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.branch_fanout import fan_out_branches
from lakefs_mirror_devenv.dagster_audit import BACKFILL_STAGES, stage_table
from lakefs_mirror_devenv.dagster_convergence import BackfillOutcome, Convergence, backfill_mirror, converge_mirror
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.config import load_config, parse_duration
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.orchestration.definitions import DEFAULT_LOCATION_NAME
from lakefs_mirror_dagster.orchestration.mirroring import reconcile_mirrors
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication.heads import branch_heads

REPO = "dagbranches"
#: A UI backfill of every branch may take this many times a ``sync --once`` of a fresh mirror.
GOAL_BACKFILL_RATIO = 1.5


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


def backfill_goals(
    result: BackfillOutcome, heads: dict[str, str], sync: ChildRun, sync_lagging: list[str]
) -> list[tuple[str, str, bool]]:
    """(what, measured, met) for each goal of ``--mode backfill``."""
    a = result.audit
    once = sum(1 for b, h in heads.items() if a.materialized.get(b) == 1 and a.materialized_commits.get(b) == h)
    ratio = result.run_seconds / sync.seconds if sync.seconds > 0 else math.inf
    return [
        ("backfill succeeded", result.status, result.status == "COMPLETED_SUCCESS"),
        ("runs created = 1 (and no other run)", f"{len(result.backfill_runs)} ({result.runs} in all)",
         len(result.backfill_runs) == 1 and result.runs == 1),
        ("each branch materialized once, for its head", f"{once}/{len(heads)}", once == len(heads)),
        ("backfill mirror = source heads", f"{len(heads) - len(result.lagging)}/{len(heads)}", not result.lagging),
        ("sync --once mirror = source heads", f"{len(heads) - len(sync_lagging)}/{len(heads)} (exit "
         f"{sync.returncode})", not sync_lagging and sync.returncode == 0),
        (f"backfill / sync --once <= {GOAL_BACKFILL_RATIO}", f"{ratio:.2f}", ratio <= GOAL_BACKFILL_RATIO),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--mode",
        choices=("sensor", "backfill"),
        default="sensor",
        help="sensor: the commit sensor's runs; backfill: one UI backfill of every branch, vs sync --once",
    )
    parser.add_argument("--branches", type=int, default=200)
    parser.add_argument("--max-concurrent-runs", type=int, default=4, help="the run queue's limit (dagster.yaml)")
    parser.add_argument(
        "--interval", default="5s", help="commit_sensor.process_branches_duration (default 5s; sensor mode)"
    )
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
        client, gateway = admin_client(region), region.s3_gateway_client()
        client.create_repository(REPO, region.namespace_for(REPO))
        gateway.put_object(Bucket=REPO, Key="main/tables/t/part-0.json", Body=b'{"row": 0}')
        heads = {"main": client.commit(REPO, "main", "first").id}
        started = time.monotonic()
        heads.update(fan_out_branches(client, gateway, REPO, [f"b{i:04}" for i in range(args.branches)], workers=8))
        print(f"[build] {args.branches} branches, one commit each, in {time.monotonic() - started:.1f}s", flush=True)
        if args.mode == "backfill":
            ok, figures = _backfill_mode(args, env, client, heads, work)
        else:
            ok, figures = _sensor_mode(args, env, client, heads, work)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  kept {work} (Dagster's logs: {work / 'dagster_home'}/dagster-*.log)")
    return 0 if ok else 1


def _active_mirror(env: Environment, work: Path, interval: str) -> tuple[str, Path]:
    """A new mirror of ``REPO``, active, and the mirror region's config with the commit sensor every ``interval``."""
    name = create_mirror(env, REPO)
    config = config_variant(
        service_config(env, MIRROR),
        work / "replication-daemon.yaml",
        commit_sensor={"process_branches_duration": interval},
    )
    service = ReplicationService(load_config(config, env={}))
    try:
        reconcile_mirrors(service)  # what the manager sensor does before the mirror has assets
    finally:
        service.close()
    return name, config


def _sensor_mode(
    args: argparse.Namespace, env: Environment, client: LakeFSClient, heads: dict[str, str], work: Path
) -> tuple[bool, dict[str, object]]:
    name, config = _active_mirror(env, work, args.interval)
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
        destination=admin_client(env.region(MIRROR)),
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
    audit = {f.name: getattr(a, f.name) for f in fields(a)}  # asdict() would turn Counters into tuple keys
    figures = {"branches": args.branches, "seconds": result.seconds, "audit": audit, "load": machine_load()}
    return all(met for _, _, met in table), figures


def _backfill_mode(
    args: argparse.Namespace, env: Environment, client: LakeFSClient, heads: dict[str, str], work: Path
) -> tuple[bool, dict[str, object]]:
    name, config = _active_mirror(env, work, "1h")  # the stopped sensor would not scan before an hour anyway
    destination = admin_client(env.region(MIRROR))
    print(f"[backfill] one UI backfill of {len(heads)} branch partitions, {args.launcher} launcher; DAGSTER_HOME "
          f"{work / 'dagster_home'}", flush=True)  # fmt: skip
    result = backfill_mirror(
        work / "dagster_home",
        workspace=REPO_ROOT / "workspace.yaml",
        replication_config=config,
        location=DEFAULT_LOCATION_NAME,
        mirror=name,
        source=client,
        source_repository=REPO,
        destination=destination,
        timeout_s=args.timeout,
        max_concurrent_runs=args.max_concurrent_runs,
        fork_runs=args.launcher == "fork",
    )
    print(f"[backfill] {result.status} in {result.seconds:.1f}s; {machine_load()}", flush=True)
    baseline = create_mirror(env, REPO)  # a second fresh mirror of the same source, same region and config
    argv = [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(config), "sync", "--once",
            "--mirror", baseline]  # fmt: skip
    sync = run_child(argv, timeout_s=args.timeout, what=f"sync --once of {baseline}")
    source_heads = branch_heads(client, REPO, page_size=1000)
    got = branch_heads(destination, baseline, page_size=1000, missing_ok=True)
    sync_lagging = sorted(b for b in set(source_heads) | set(got) if source_heads.get(b) != got.get(b))
    if sync.returncode != 0:
        print(f"[sync --once] exit {sync.returncode}: {sync.stderr[-3000:]}")
    progress = [line for line in result.log_lines if line.startswith("progress: ")]
    print(f"\n{len(heads)} branches ({args.branches} + main): one UI backfill under dagster-daemon vs "
          f"lakefs-mirror sync --once; {machine_load()}")  # fmt: skip
    print(f"  backfill: launch -> its run ended (mirror converged) {result.run_seconds:8.1f} s")
    print(
        f"  backfill: launch -> shown complete in the UI         {result.seconds:8.1f} s (backfill daemon: every 30 s)"
    )
    print(f"  sync --once of a fresh mirror                        {sync.seconds:8.1f} s")
    print(f"  the run's log: {len(result.log_lines)} lines, {len(progress)} engine progress lines; last: "
          f"{progress[-1] if progress else '-'}")  # fmt: skip
    print("  where the backfill's time went (its one run; the two columns are equal):")
    print("\n".join(stage_table([result.stages], BACKFILL_STAGES)) or "  (no stages: not one run that succeeded)")
    table = backfill_goals(result, heads, sync, sync_lagging)
    for what, measured, met in table:
        print(f"  {what:48} {measured:>24}  {'met' if met else 'MISSED'}")
    print(f"  (launch -> shown complete / sync --once: {result.seconds / max(sync.seconds, 1e-9):.2f})")
    figures = {
        "branches": args.branches,
        "backfill_status": result.status,
        "backfill_runs": len(result.backfill_runs),
        "runs": result.runs,
        "backfill_run_seconds": result.run_seconds,
        "backfill_seconds": result.seconds,
        "sync_once_seconds": sync.seconds,
        "ratio": result.run_seconds / max(sync.seconds, 1e-9),
        "stages": result.stages,
        "load": machine_load(),
    }
    return all(met for _, _, met in table), figures


if __name__ == "__main__":
    sys.exit(main())
