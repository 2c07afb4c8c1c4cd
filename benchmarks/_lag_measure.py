"""Measuring one mode of ``lag.py`` (and ``wan.py``'s lag at a round trip): one-object commits made one at a time,
each timed until the mirror's head is it; under Dagster, where each run's time went, read back from the event log.
Dagster is imported only by the Dagster modes' functions."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _lag_setup import BIN, BRANCH, LAG, POLL_S, LagSetting, background_process, lakefs_client
from _tree import REPO_ROOT  # also puts this tree's package first on sys.path
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.dagster_audit import RUN_STAGES, TickTimes, run_marks, run_stages, sensor_ticks
from lakefs_mirror_devenv.dagster_daemon import dagster_daemon, wait_runs_finished, write_instance_config

from lakefs_mirror_dagster.lakefs import LakeFSClient, LakeFSNotFound

__all__ = [
    "INTERRUPTED",
    "STAGES",
    "ModeResult",
    "Sample",
    "measure",
    "run_dagster",
    "run_engine",
]

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


def _mirror_head(client: LakeFSClient, mirror: str) -> str | None:
    try:
        return client.get_branch_head(mirror, BRANCH)
    except LakeFSNotFound:
        return None


def _wait_mirrored(
    client: LakeFSClient, mirror: str, commit_id: str, timeout_s: float, alive: Callable[[], bool]
) -> float | None:
    """Poll the mirror's head every POLL_S until it is ``commit_id``; the wall time it was seen, or None."""
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / POLL_S) + 2):
        if _mirror_head(client, mirror) == commit_id:
            return time.time()
        if time.monotonic() > deadline or not alive():
            return None
        time.sleep(POLL_S)
    return None


def measure(
    env: Environment,
    mode: str,
    commits: int,
    warmup: int,
    interval_s: float,
    timeout_s: float,
    alive: Callable[[], bool],
    rng: random.Random,
    setting: LagSetting = LAG,
) -> ModeResult:
    """``warmup`` then ``commits`` one-object commits to the source repository, each after a random pause of up to
    ``interval_s``, each timed until the mirror's head is it (``mode`` names the objects: one per run and mode)."""
    src, dst = lakefs_client(env, setting.source_region), lakefs_client(env, setting.mirror_region)
    repo = setting.repo
    result = ModeResult(mode)
    try:
        for n in range(warmup + commits):
            time.sleep(rng.uniform(0, interval_s))
            src.upload_object(repo, BRANCH, f"lag/{mode}/{n:04d}.json", json.dumps({"n": n, "mode": mode}).encode())
            commit = src.commit(repo, BRANCH, f"{mode} lag probe {n}")
            sample = Sample(commit.id, time.time())
            sample.mirrored_at = _wait_mirrored(dst, setting.mirror, commit.id, timeout_s, alive)
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


def run_dagster(
    env: Environment,
    config_path: Path,
    work: Path,
    *,
    dequeue_interval: int | None = None,
    sensor_workers: int = 0,
    fork_runs: bool = False,
    mode: str = "dagster",
    setting: LagSetting = LAG,
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
        dagster_daemon(
            home, workspace=REPO_ROOT / "workspace.yaml", replication_config=config_path, log_path=log
        ) as alive,
    ):
        result = measure(env, mode, alive=alive, setting=setting, **kw)
        # Let the last run finish (it tears Spark down after promoting) before the daemon is stopped.
        if not wait_runs_finished(instance, timeout_s=180.0):
            print("[lag] WARNING: runs still unfinished after 180s; stopping the daemon", flush=True)
    result.stages, result.ticks, duplicated = _dagster_stages(home, result.samples, setting.mirror)
    result.error = result.error or duplicated
    return result


def run_engine(
    env: Environment, config_path: Path, work: Path, *, mode: str = "engine", setting: LagSetting = LAG, **kw: Any
) -> ModeResult:
    """``measure`` with the engine's own loop (``lakefs-mirror sync``) running in the background on ``config_path``."""
    argv = [str(BIN / "lakefs-mirror"), "--config", str(config_path), "sync", "--mirror", setting.mirror]
    print(f"[lag] engine: {' '.join(argv)} (log {work / 'sync.log'})", flush=True)
    with background_process(argv, work / "sync.log", {}) as alive:
        return measure(env, mode, alive=alive, setting=setting, **kw)


STAGES = (
    ("wait", "commit -> start of the commit-sensor tick that created its run (0 if it began before)"),
    ("tick", "later of commit and tick start -> run created (hook wait, evaluation, the run's plan and record)"),
    *RUN_STAGES[:-1],
    ("seen", "materialization -> mirror head seen by the 0.2 s poller"),
    RUN_STAGES[-1],
)


def _dagster_stages(home: Path, samples: list[Sample], mirror: str) -> tuple[list[dict[str, float]], str, str]:
    """Per measured commit, the stages of its run (the event log's timestamps and the tick that created it),
    a summary of the commit sensor's ticks and of which sensors created the runs, and an error when two runs
    carry the same run key or the same (branch, source commit)."""
    import dagster as dg

    from lakefs_mirror_dagster.orchestration.mirroring import (
        BRANCH_TAG,
        MIRROR_TAG,
        SOURCE_COMMIT_TAG,
        commit_sensor_name,
        hooks_sensor_name,
    )

    by_commit = {s.commit_id: s for s in samples}
    stages: list[dict[str, float]] = []
    keys: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    creators: Counter[str] = Counter()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        ticks = sensor_ticks(instance, commit_sensor_name(mirror))
        # the hooks sensors' ticks too (hooks.sensor_listeners): whichever listener created the run
        listened = [t for n in range(2, 5) for t in sensor_ticks(instance, hooks_sensor_name(mirror, n))]
        tick_of = {run_id: tick.timestamp for tick in ticks + listened for run_id in tick.run_ids}
        for record in instance.get_run_records(filters=dg.RunsFilter(tags={MIRROR_TAG: mirror})):
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
