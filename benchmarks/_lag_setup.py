"""The lag benchmark's setting (``lag.py``, and ``wan.py``'s lag across a link): the source repository and its
mirror, converged first; replication configs with the interval under test; ``serve`` with hooks and ``sync`` run
in the background."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from _tree import REPO_ROOT  # also puts this tree's package first on sys.path
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port, pid_alive, start_process, stop_pid
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService, install_hooks
from lakefs_mirror_dagster.service.hooks import HOOKS_PATH

__all__ = [
    "BIN",
    "BRANCH",
    "HOOKS_POLLING",
    "LAG",
    "POLL_S",
    "LagSetting",
    "background_process",
    "hooks_serving",
    "lakefs_client",
    "prepare",
    "write_config",
]

BIN = Path(sys.executable).parent
BRANCH = "main"
POLL_S = 0.2


@dataclass(frozen=True)
class LagSetting:
    """Where the lag is measured: the source repository in ``source_region``, its mirror in ``mirror_region``."""

    source_region: str = "region-a"
    mirror_region: str = "region-b"
    repo: str = "lagbench"
    mirror: str = "lagbench-mirror"


#: ``lag.py``'s: two regions of the default dev environment, on loopback.
LAG = LagSetting()

#: The polling interval under the hook modes: far beyond the run, so every figure is the hook's.
HOOKS_POLLING = "1h"


def write_config(
    env: Environment,
    interval: str,
    *,
    region: str = LAG.mirror_region,
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
def hooks_serving(
    env: Environment, work: Path, sensor_wait: str, sensor_listeners: int, setting: LagSetting = LAG
) -> Iterator[Path]:
    """``serve`` for the source region with hooks on, the action file committed to the source repository;
    yields the mirror region's config with hooks on and polling every HOOKS_POLLING."""
    source_config = write_config(env, HOOKS_POLLING, region=setting.source_region, hooks=True)
    port = free_port()
    argv = [str(BIN / "lakefs-mirror"), "--config", str(source_config), "serve", "--listen", f"127.0.0.1:{port}"]
    print(f"[lag] hooks: {' '.join(argv)} (log {work / 'serve.log'})", flush=True)
    with background_process(argv, work / "serve.log", {}) as alive:
        _wait_healthy(f"http://127.0.0.1:{port}/_health", alive)
        url = f"http://127.0.0.1:{port}{HOOKS_PATH}"
        install_hooks(lakefs_client(env, setting.source_region), setting.repo, url, with_secret=False)
        yield write_config(
            env,
            HOOKS_POLLING,
            region=setting.mirror_region,
            hooks=True,
            sensor_wait=sensor_wait,
            sensor_listeners=sensor_listeners,
        )


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


def lakefs_client(env: Environment, region: str) -> LakeFSClient:
    r = env.region(region)
    return LakeFSClient(r.endpoint, r.access_key_id, r.secret_access_key)


def prepare(env: Environment, config_path: Path, setting: LagSetting = LAG) -> None:
    """Source repository with a few commits, the mirror created and converged by one engine pass (``config_path``:
    the mirror region's)."""
    from lakefs_mirror_dagster.config import load_config

    repo, mirror = setting.repo, setting.mirror
    src = lakefs_client(env, setting.source_region)
    src.create_repository(repo, env.region(setting.source_region).namespace_for(repo))
    for day in range(3):
        for part in range(4):
            src.upload_object(repo, BRANCH, f"events/day={day}/part-{part}.json", os.urandom(4096))
        src.commit(repo, BRANCH, f"day {day}")
    source_config = Path(env.state_dir) / f"replication-{setting.source_region}.yaml"
    source_svc = ReplicationService(load_config(source_config, env={}))
    mirror_svc = ReplicationService(load_config(config_path, env={}))
    try:
        source_svc.create_mirror(
            source_repository=repo,
            name=mirror,
            region=setting.mirror_region,
            storage_namespace=env.region(setting.mirror_region).namespace_for(mirror),
        )
        results = mirror_svc.sync(name=mirror)
        if not results or not all(r.ok for r in results):
            raise RuntimeError(f"the initial sync of {mirror} failed: {results}")
    finally:
        source_svc.close()
        mirror_svc.close()


@contextmanager
def background_process(argv: list[str], log: Path, env: dict[str, str]) -> Iterator[Callable[[], bool]]:
    """A subprocess in its own process group (its children too), stopped whatever happens."""
    process = start_process(argv, log_path=log, env=env, cwd=REPO_ROOT)
    try:
        yield lambda: process.poll() is None
    finally:
        stop_pid(process.pid, timeout_s=30)
        if pid_alive(process.pid):
            print(f"[lag] WARNING: {argv[0]} (pid {process.pid}) still alive", file=sys.stderr)
