"""Source-commit-to-mirror lag, under the Dagster daemon and under the engine's own loop, in one run.

Starts two local lakeFS regions, a source repository in region-a and its mirror in region-b (converged
first). Then, for each mode, it makes ``--commits`` one-object commits on ``main``, one at a time: the lag
of a commit is the time from the moment the commit call returned (the commit exists) until the mirror's
``main`` equals it, polled every 0.2 s. A random pause (0 to one interval) before each commit spreads the
commits over the phase of the polling interval, so p50 is not an artefact of the phase.

- ``dagster``: ``dagster-daemon run -w workspace.yaml`` with a temporary DAGSTER_HOME (default instance:
  queued run coordinator, runs in subprocesses). The commit sensor runs by default. After the run,
  each Dagster run's event log is read back and the lag is split into stages.
- ``engine``: ``lakefs-mirror sync`` polling every ``commit_sensor.process_branches_duration``.
- ``engine-hooks`` and ``dagster-hooks``: the same with ``hooks.enabled``: ``lakefs-mirror serve`` runs for the
  source region, the source repository holds the action file ``mirrors create --install-hooks`` writes, so
  lakeFS calls ``serve`` after every commit; the polling interval is 1h, so every figure is the hook's.

    .venv/bin/python benchmarks/lag.py [--commits 20] [--interval 5s]
        [--modes dagster,engine,dagster-hooks,engine-hooks] [--dequeue-interval SECONDS]
        [--sensor-workers 4] [--sensor-wait 7.5s] [--sensor-listeners 2] [--launcher fork|default] [--json out.json]

Under Dagster the lag is split into stages read from the event log (the tick that created the run, the queue,
the run worker's start, the sync) and the commit sensor's tick cadence is printed: where the time goes. The
hooks mode runs two listening sensors (``hooks.sensor_listeners``, ``--sensor-listeners``); two runs with the
same run key or (branch, source commit) are an error.

Goals (p50 / p95): polling under Dagster p50 <= 10 s with a 5 s sensor interval; hooks 1 s / 2 s in the engine
loop and 4 s / 8 s under the Dagster daemon. Exits 1 when a goal is missed or a commit did not reach the mirror
(logs and the Dagster instance are then kept).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lakefs_mirror_devenv import DEFAULT_REGIONS, Environment, environment_up
from lakefs_mirror_devenv.dagster_audit import RUN_STAGES, TickTimes, run_marks, run_stages, sensor_ticks, stage_table
from lakefs_mirror_devenv.dagster_daemon import dagster_daemon, wait_runs_finished, write_instance_config
from lakefs_mirror_devenv.environment import stop_environment
from lakefs_mirror_devenv.processes import free_port, pid_alive, start_process, stop_pid
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.config import format_duration, parse_duration
from lakefs_mirror_dagster.lakefs import LakeFSClient, LakeFSNotFound
from lakefs_mirror_dagster.orchestration.mirroring import (
    BRANCH_TAG,
    MIRROR_TAG,
    SOURCE_COMMIT_TAG,
    commit_sensor_name,
    hooks_sensor_name,
)
from lakefs_mirror_dagster.region import ReplicationService, install_hooks
from lakefs_mirror_dagster.service.hooks import HOOKS_PATH

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SOURCE_REGION, MIRROR_REGION = "region-a", "region-b"
REPO, MIRROR, BRANCH = "lagbench", "lagbench-mirror", "main"
POLL_S = 0.2
MODES = ("dagster", "engine", "dagster-hooks", "engine-hooks")
#: Per mode, the goals for p50 and p95 (None: no goal).
GOALS: dict[str, tuple[float | None, float | None]] = {
    "dagster": (10.0, None),
    "engine": (None, None),
    "dagster-hooks": (4.0, 8.0),
    "engine-hooks": (1.0, 2.0),
}
#: The polling interval under the hook modes: far beyond the run, so every figure is the hook's.
HOOKS_POLLING = "1h"
INTERRUPTED = "interrupted (Ctrl-C): the samples so far"


@dataclass
class Sample:
    """One commit: when its creation call returned, when the mirror showed it (time.time() seconds)."""

    commit_id: str
    committed_at: float
    mirrored_at: float | None = None

    @property
    def lag(self) -> float | None:
        return None if self.mirrored_at is None else self.mirrored_at - self.committed_at


@dataclass
class ModeResult:
    mode: str
    samples: list[Sample] = field(default_factory=list)
    stages: list[dict[str, float]] = field(default_factory=list)
    ticks: str = ""
    error: str = ""

    @property
    def lags(self) -> list[float]:
        return [s.lag for s in self.samples if s.lag is not None]


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100), the value a reader can find in the raw list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


# ---------------------------------------------------------------------------------------------- setup
def _write_config(
    env: Environment,
    interval: str,
    *,
    region: str = MIRROR_REGION,
    hooks: bool = False,
    sensor_wait: str = "0s",
    sensor_listeners: int = 1,
) -> Path:
    """``region``'s replication config with the commit sensor / sync interval under test (and hooks on, a hooks
    tick of the commit sensor waiting ``sensor_wait`` for a wake-up, ``sensor_listeners`` sensors listening)."""
    source = Path(env.state_dir) / f"replication-{region}.yaml"
    settings = {"enabled": True, "sensor_wait": sensor_wait, "sensor_listeners": sensor_listeners}
    extra = {"hooks": settings} if hooks else {}
    return config_variant(
        source,
        source.with_name(f"lag-{'hooks-' if hooks else ''}{region}.yaml"),
        commit_sensor={"process_branches_duration": interval},
        **extra,
    )


@contextmanager
def _hooks_serving(env: Environment, work: Path, sensor_wait: str, sensor_listeners: int) -> Iterator[Path]:
    """``serve`` for the source region with hooks on, the action file committed to the source repository;
    yields the mirror region's config with hooks on and polling every HOOKS_POLLING."""
    source_config = _write_config(env, HOOKS_POLLING, region=SOURCE_REGION, hooks=True)
    port = free_port()
    argv = [str(BIN / "lakefs-mirror"), "--config", str(source_config), "serve", "--listen", f"127.0.0.1:{port}"]
    print(f"[lag] hooks: {' '.join(argv)} (log {work / 'serve.log'})", flush=True)
    with _server(argv, work / "serve.log", {}) as alive:
        _wait_healthy(f"http://127.0.0.1:{port}/_health", alive)
        install_hooks(_client(env, SOURCE_REGION), REPO, f"http://127.0.0.1:{port}{HOOKS_PATH}", with_secret=False)
        yield _write_config(env, HOOKS_POLLING, hooks=True, sensor_wait=sensor_wait, sensor_listeners=sensor_listeners)


def _wait_healthy(url: str, alive: Callable[[], bool], timeout_s: float = 60.0) -> None:
    import urllib.request

    for _ in range(int(timeout_s / POLL_S)):
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if not alive():
            break
        time.sleep(POLL_S)
    raise RuntimeError(f"serve did not answer {url} within {timeout_s:.0f}s")


def _client(env: Environment, region: str) -> LakeFSClient:
    r = env.region(region)
    return LakeFSClient(r.endpoint, r.access_key_id, r.secret_access_key)


def _prepare(env: Environment, config_path: Path) -> None:
    """Source repository with a few commits, the mirror created and converged by one engine pass."""
    from lakefs_mirror_dagster.config import load_config

    src = _client(env, SOURCE_REGION)
    src.create_repository(REPO, env.region(SOURCE_REGION).namespace_for(REPO))
    for day in range(3):
        for part in range(4):
            src.upload_object(REPO, BRANCH, f"events/day={day}/part-{part}.json", os.urandom(4096))
        src.commit(REPO, BRANCH, f"day {day}")
    source_svc = ReplicationService(load_config(Path(env.state_dir) / f"replication-{SOURCE_REGION}.yaml", env={}))
    mirror_svc = ReplicationService(load_config(config_path, env={}))
    try:
        source_svc.create_mirror(
            source_repository=REPO,
            name=MIRROR,
            region=MIRROR_REGION,
            storage_namespace=env.region(MIRROR_REGION).namespace_for(MIRROR),
        )
        results = mirror_svc.sync(name=MIRROR)
        if not results or not all(r.ok for r in results):
            raise RuntimeError(f"the initial sync of {MIRROR} failed: {results}")
    finally:
        source_svc.close()
        mirror_svc.close()


# ---------------------------------------------------------------------------------------------- measuring
def _mirror_head(client: LakeFSClient) -> str | None:
    try:
        return client.get_branch_head(MIRROR, BRANCH)
    except LakeFSNotFound:
        return None


def _wait_mirrored(client: LakeFSClient, commit_id: str, timeout_s: float, alive: Callable[[], bool]) -> float | None:
    """Poll the mirror's head every POLL_S until it is ``commit_id``; the wall time it was seen, or None."""
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / POLL_S) + 2):
        if _mirror_head(client) == commit_id:
            return time.time()
        if time.monotonic() > deadline or not alive():
            return None
        time.sleep(POLL_S)
    return None


def _measure(
    env: Environment,
    mode: str,
    commits: int,
    warmup: int,
    interval_s: float,
    timeout_s: float,
    alive: Callable[[], bool],
    rng: random.Random,
) -> ModeResult:
    src, dst = _client(env, SOURCE_REGION), _client(env, MIRROR_REGION)
    result = ModeResult(mode)
    try:
        for n in range(warmup + commits):
            time.sleep(rng.uniform(0, interval_s))
            src.upload_object(REPO, BRANCH, f"lag/{mode}/{n:04d}.json", json.dumps({"n": n, "mode": mode}).encode())
            commit = src.commit(REPO, BRANCH, f"{mode} lag probe {n}")
            sample = Sample(commit.id, time.time())
            sample.mirrored_at = _wait_mirrored(dst, commit.id, timeout_s, alive)
            label = "warm-up" if n < warmup else f"{n - warmup + 1}/{commits}"
            shown = f"{sample.lag:6.2f}s" if sample.lag is not None else "NOT MIRRORED"
            print(f"[lag] {mode:7} {label:>7} {commit.id[:12]} {shown}", flush=True)
            if sample.lag is None:
                died = "" if alive() else " (died)"
                result.error = f"commit {commit.id} not mirrored within {timeout_s:.0f}s{died}"
                break
            if n >= warmup:
                result.samples.append(sample)
    except KeyboardInterrupt:  # Ctrl-C: keep what was measured, report it, skip the modes not run yet
        result.error = INTERRUPTED
    return result


@contextmanager
def _server(argv: list[str], log: Path, env: dict[str, str]) -> Iterator[Callable[[], bool]]:
    """A subprocess in its own process group (its children too), stopped whatever happens."""
    process = start_process(argv, log_path=log, env=env, cwd=ROOT)
    try:
        yield lambda: process.poll() is None
    finally:
        stop_pid(process.pid, timeout_s=30)
        if pid_alive(process.pid):
            print(f"[lag] WARNING: {argv[0]} (pid {process.pid}) still alive", file=sys.stderr)


def run_dagster(
    env: Environment,
    config_path: Path,
    work: Path,
    *,
    dequeue_interval: int | None = None,
    sensor_workers: int = 0,
    fork_runs: bool = False,
    mode: str = "dagster",
    **kw: Any,
) -> ModeResult:
    import dagster as dg

    home = work / "dagster_home"
    write_instance_config(
        home, dequeue_interval_seconds=dequeue_interval, sensor_workers=sensor_workers or None, fork_runs=fork_runs
    )
    log = work / "dagster-daemon.log"
    print(f"[lag] dagster: dagster-daemon run -w workspace.yaml (DAGSTER_HOME={home}, log {log})", flush=True)
    # The instance first: it creates the storage's tables before the daemon and its code server open them (all
    # three creating them at once can leave Dagster's SQLite schedule storage with two alembic heads).
    with (
        dg.DagsterInstance.from_config(str(home)) as instance,
        dagster_daemon(home, workspace=ROOT / "workspace.yaml", replication_config=config_path, log_path=log) as alive,
    ):
        result = _measure(env, mode, alive=alive, **kw)
        # Let the last run finish (it tears Spark down after promoting) before the daemon is stopped.
        if not wait_runs_finished(instance, timeout_s=180.0):
            print("[lag] WARNING: runs still unfinished after 180s; stopping the daemon", flush=True)
    result.stages, result.ticks, duplicated = _dagster_stages(home, result.samples)
    result.error = result.error or duplicated
    return result


def run_engine(env: Environment, config_path: Path, work: Path, *, mode: str = "engine", **kw: Any) -> ModeResult:
    argv = [str(BIN / "lakefs-mirror"), "--config", str(config_path), "sync", "--mirror", MIRROR]
    print(f"[lag] engine: {' '.join(argv)} (log {work / 'sync.log'})", flush=True)
    with _server(argv, work / "sync.log", {}) as alive:
        return _measure(env, mode, alive=alive, **kw)


# ---------------------------------------------------------------------------------------------- where the time goes
STAGES = (
    ("wait", "commit -> start of the commit-sensor tick that created its run (0 if it began before)"),
    ("tick", "later of commit and tick start -> run created (hook wait, evaluation, the run's plan and record)"),
    *RUN_STAGES[:-1],
    ("seen", "materialization -> mirror head seen by the 0.2 s poller"),
    RUN_STAGES[-1],
)


def _dagster_stages(home: Path, samples: list[Sample]) -> tuple[list[dict[str, float]], str, str]:
    """Per measured commit, the stages of its run (the event log's timestamps and the tick that created it),
    a summary of the commit sensor's ticks and of which sensors created the runs, and an error when two runs
    carry the same run key or the same (branch, source commit)."""
    import dagster as dg

    by_commit = {s.commit_id: s for s in samples}
    stages: list[dict[str, float]] = []
    keys: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    creators: Counter[str] = Counter()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        ticks = sensor_ticks(instance, commit_sensor_name(MIRROR))
        # the hooks sensors' ticks too (hooks.sensor_listeners): whichever listener created the run
        listened = [t for n in range(2, 5) for t in sensor_ticks(instance, hooks_sensor_name(MIRROR, n))]
        tick_of = {run_id: tick.timestamp for tick in ticks + listened for run_id in tick.run_ids}
        for record in instance.get_run_records(filters=dg.RunsFilter(tags={MIRROR_TAG: MIRROR})):
            tags = record.dagster_run.tags
            keys[tags.get("dagster/run_key", "")] += 1
            pairs[(tags.get(BRANCH_TAG, "tags"), tags.get(SOURCE_COMMIT_TAG, ""))] += 1
            creators[tags.get("dagster/sensor_name", "?")] += 1
            sample = by_commit.get(record.dagster_run.tags.get(SOURCE_COMMIT_TAG, ""))
            created = record.create_timestamp.timestamp()
            marks = run_marks(instance, record.dagster_run.run_id)
            run = run_stages(created, marks)
            if sample is None or sample.mirrored_at is None or run is None:
                continue
            begun = max(tick_of.get(record.dagster_run.run_id, created), sample.committed_at)
            stages.append(
                {
                    "lag": sample.mirrored_at - sample.committed_at,
                    "wait": begun - sample.committed_at,
                    "tick": created - begun,
                    **run,
                    "seen": sample.mirrored_at - marks["ASSET_MATERIALIZATION"],
                }
            )
    by_sensor = ", ".join(f"{n} by {name}" for name, n in sorted(creators.items()))
    summary = f"{TickTimes.of(ticks).summary()}\n  runs: {sum(creators.values())} ({by_sensor})"
    twice = [k for k, n in keys.items() if n > 1] + [f"{b}@{c}" for (b, c), n in pairs.items() if n > 1]
    return stages, summary, f"requested twice: {', '.join(twice)}" if twice else ""


# ---------------------------------------------------------------------------------------------- report
def _goal_text(value: float, goal: float | None) -> str:
    """``1.23s (goal <= 2s ok)``: a figure with its goal next to it."""
    if goal is None:
        return f"{value:7.2f}s {'':17}"
    verdict = "ok" if value <= goal else "MISSED"
    return f"{value:7.2f}s (goal <= {goal:g}s {verdict:6})"


def goals_met(result: ModeResult) -> bool:
    """Whether the mode's p50 and p95 are within its goals (a mode with an error or no sample misses them)."""
    lags = result.lags
    if not lags or result.error:
        return False
    p50_goal, p95_goal = GOALS[result.mode]
    return (p50_goal is None or statistics.median(lags) <= p50_goal) and (
        p95_goal is None or percentile(lags, 95) <= p95_goal
    )


def report(results: list[ModeResult], interval: str, commits: int) -> bool:
    """Print p50/p95/max per mode with each goal beside its figure, the Dagster stage medians, and whether
    every goal is met."""
    print(
        f"\n[lag] source commit -> mirror head, {commits} commit(s) per mode, polling interval {interval} "
        f"({HOOKS_POLLING} in the hook modes), poll {POLL_S}s"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"[lag] load average now {load} on {os.cpu_count()} CPU(s): other work on the machine inflates every figure")
    print(f"  {'mode':13} {'n':>3} {'p50':>29} {'p95':>29} {'max':>8} {'min':>8}")
    for r in results:
        lags = r.lags
        if lags:
            p50_goal, p95_goal = GOALS[r.mode]
            print(
                f"  {r.mode:13} {len(lags):3d} {_goal_text(statistics.median(lags), p50_goal)} "
                f"{_goal_text(percentile(lags, 95), p95_goal)} {max(lags):7.2f}s {min(lags):7.2f}s"
                + (f"  ({r.error})" if r.error else "")
            )
        else:
            print(f"  {r.mode:13}   0  no sample: {r.error}")
    for r in results:
        if r.stages:
            print(f"\n[lag] where the time goes under {r.mode} (median / max over {len(r.stages)} run(s)):")
            print("\n".join(stage_table(r.stages, STAGES)))
        elif r.mode.startswith("dagster"):
            print(f"\n[lag] {r.mode}: no run with every stage's event in its log (nothing to split)")
        if r.ticks:
            print(f"  commit sensor: {r.ticks}")
    met = all(goals_met(r) for r in results if GOALS[r.mode] != (None, None))
    print(f"\n[lag] goals: {'MET' if met else 'MISSED'}")
    return met


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=20, help="measured commits per mode (default 20)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured commits first, per mode (default 1)")
    parser.add_argument("--interval", default="5s", help="commit sensor / sync interval (default 5s)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated: {', '.join(MODES)}")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one commit may take to mirror")
    parser.add_argument("--seed", type=int, default=7, help="seed of the pauses between commits")
    parser.add_argument("--state-dir", type=Path, help="where servers keep data (default: a temporary dir)")
    parser.add_argument(
        "--dequeue-interval",
        type=int,
        help="seconds between the run queue's dequeues (default: Dagster's own default, 5)",
    )
    parser.add_argument(
        "--sensor-workers",
        type=int,
        default=4,
        help="the sensor daemon's threads (dagster.yaml sensors: use_threads, num_workers, num_submit_workers); "
        "0: Dagster's default, one sensor after another (default 4)",
    )
    parser.add_argument(
        "--sensor-wait",
        default="7.5s",
        help="hooks.sensor_wait of the dagster-hooks mode: how long a tick waits for a hook (default 7.5s: with two "
        "listeners, the one whose turn it is waits across the daemon's next loop; 0s: off)",
    )
    parser.add_argument(
        "--sensor-listeners",
        type=int,
        default=2,
        help="hooks.sensor_listeners of the dagster-hooks mode: sensors of the mirror waiting for hooks (default 2; "
        "1: the commit sensor alone, as before)",
    )
    parser.add_argument(
        "--launcher",
        choices=("fork", "default"),
        default="fork",
        help="fork: runs start as forks of a warm process (ForkRunLauncher); default: Dagster's, a new "
        "interpreter per run (default fork)",
    )
    parser.add_argument("--json", type=Path, help="also write every sample and stage here")
    args = parser.parse_args(argv)
    if args.commits < 1 or args.warmup < 0 or args.timeout <= 0:
        parser.error("--commits must be >= 1, --warmup >= 0 and --timeout > 0")
    if args.dequeue_interval is not None and args.dequeue_interval < 1:
        parser.error("--dequeue-interval must be at least 1 (seconds)")
    if args.sensor_workers < 0:
        parser.error("--sensor-workers must be >= 0")
    if not 1 <= args.sensor_listeners <= 4:
        parser.error("--sensor-listeners must be 1 to 4")
    try:
        parse_duration(args.sensor_wait)
    except ValueError as exc:
        parser.error(f"--sensor-wait: {exc}")
    try:
        args.interval_td = parse_duration(args.interval)
    except ValueError as exc:
        parser.error(f"--interval: {exc}")
    if args.interval_td.total_seconds() < 1:
        parser.error("--interval must be at least 1s (Dagster sensors tick in whole seconds)")
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(args.mode_list) - set(MODES))
    if unknown or not args.mode_list:
        parser.error(f"--modes: unknown {unknown or 'empty'}; choose from {', '.join(MODES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    interval = format_duration(args.interval_td)
    work = args.state_dir or Path(tempfile.mkdtemp(prefix="lakefs-mirror-lag-"))
    started = time.monotonic()
    env = environment_up(work / "env", DEFAULT_REGIONS)
    results: list[ModeResult] = []
    try:
        config_path = _write_config(env, interval)
        _prepare(env, config_path)
        print(f"[lag] regions up, {REPO} mirrored to {MIRROR} ({time.monotonic() - started:.1f}s)", flush=True)
        common: dict[str, Any] = {
            "commits": args.commits,
            "warmup": args.warmup,
            "interval_s": args.interval_td.total_seconds(),
            "timeout_s": args.timeout,
            "rng": random.Random(args.seed),
        }
        for mode in args.mode_list:
            (work / mode).mkdir(parents=True, exist_ok=True)
            with contextlib.ExitStack() as stack:
                path = config_path
                if mode.endswith("-hooks"):  # commits need no spreading over a polling phase: 0 to 1 s apart
                    path = stack.enter_context(
                        _hooks_serving(env, work / mode, args.sensor_wait, args.sensor_listeners)
                    )
                kw = {**common, "interval_s": 1.0} if mode.endswith("-hooks") else common
                if mode.startswith("dagster"):
                    queue = {
                        "dequeue_interval": args.dequeue_interval,
                        "sensor_workers": args.sensor_workers,
                        "fork_runs": args.launcher == "fork",
                    }
                    results.append(run_dagster(env, path, work / mode, mode=mode, **queue, **kw))
                else:
                    results.append(run_engine(env, path, work / mode, mode=mode, **kw))
            if results[-1].error == INTERRUPTED:
                break
    finally:
        stop_environment(env)
    ok = report(results, interval, args.commits)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2))
        print(f"[lag] samples written to {args.json}")
    success = ok and not any(r.error for r in results)
    if args.state_dir is None and success:
        shutil.rmtree(work, ignore_errors=True)
        print(f"[lag] {time.monotonic() - started:.0f}s in all")
    else:
        print(f"[lag] {time.monotonic() - started:.0f}s in all; logs and Dagster instance kept in {work}")
    return 0 if success else 1


if __name__ == "__main__":
    sys.exit(main())
