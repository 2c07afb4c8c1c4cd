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

This script is the command line and the run of the modes; the setting is ``_lag_setup.py``, the measuring
``_lag_measure.py``, the report ``_lag_report.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import _tree  # noqa: F401  (this tree's package first on sys.path, before anything imports it)
from _lag_measure import INTERRUPTED, ModeResult, run_dagster, run_engine
from _lag_report import report
from _lag_setup import LAG, hooks_serving, prepare, write_config
from lakefs_mirror_devenv import DEFAULT_REGIONS, environment_up
from lakefs_mirror_devenv.environment import stop_environment

from lakefs_mirror_dagster.config import format_duration, parse_duration

MODES = ("dagster", "engine", "dagster-hooks", "engine-hooks")


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
        config_path = write_config(env, interval)
        prepare(env, config_path)
        print(f"[lag] regions up, {LAG.repo} mirrored to {LAG.mirror} ({time.monotonic() - started:.1f}s)", flush=True)
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
                        hooks_serving(env, work / mode, args.sensor_wait, args.sensor_listeners)
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
