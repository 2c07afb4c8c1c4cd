"""Fixtures for the browser test: the demo's servers left running, Dagster's UI on them, headless Chromium.

The demo runs in a subprocess (as ``lakefs-mirror dev demo --keep``), so its Spark session and environment
variables stay out of the test process. The webserver reads the demo's Dagster instance and the mirror
region's replication config, exactly as an operator following the README would start it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.dagster_webserver import dagster_webserver
from lakefs_mirror_devenv.environment import stop_environment
from lakefs_mirror_devenv.state import STATE_FILE, load_environment

__all__ = ["DemoState", "chromium_path", "dagster_ui", "demo_state"]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SKIP_ENV = "LAKEFS_MIRROR_SKIP_BROWSER"
CHROMIUM_ENV = "LAKEFS_MIRROR_CHROMIUM"
DEMO_TIMEOUT_S = 600.0
WEBSERVER_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class DemoState:
    """Where the kept demo lives: its servers, its Dagster instance and the mirror region's config."""

    state_dir: Path
    env: Environment
    dagster_home: Path
    mirror_config: Path


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's Chromium; missing is a failure (``scripts/dev test`` installs it), unless skipped on request."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: the browser test was skipped on request")
    path = os.environ.get(CHROMIUM_ENV, "/usr/bin/chromium")
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"Chromium not found at {path}: install it with `apt-get install -y chromium` (scripts/dev test does), "
            f"point {CHROMIUM_ENV} at another binary, or set {SKIP_ENV}=1 to skip the browser test",
            pytrace=False,
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"Playwright is not installed ({exc}): `pip install -e '.[test]'`", pytrace=False)
    return path


@pytest.fixture(scope="module")
def demo_state(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoState]:
    """``lakefs-mirror dev demo --keep`` in a temporary dir; its servers are stopped after the module."""
    state_dir = tmp_path_factory.mktemp("demo") / "state"
    log = state_dir.parent / "demo.log"
    try:
        with open(log, "wb") as out:
            done = subprocess.run(
                [str(BIN / "lakefs-mirror"), "dev", "demo", "--state-dir", str(state_dir), "--keep"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                timeout=DEMO_TIMEOUT_S,
                check=False,
            )
        text = log.read_text(errors="replace")
        assert done.returncode == 0 and "SUCCESS" in text, f"the demo failed (exit {done.returncode}):\n{text[-3000:]}"
        yield DemoState(
            state_dir=state_dir,
            env=load_environment(state_dir),
            dagster_home=state_dir / "dagster_home",
            mirror_config=state_dir / "replication-region-b.yaml",
        )
    finally:
        if (state_dir / STATE_FILE).exists():
            stop_environment(load_environment(state_dir))


@pytest.fixture(scope="module")
def dagster_ui(demo_state: DemoState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``dagster-webserver`` on the demo's instance and the workspace's code location; yields its URL."""
    with dagster_webserver(
        demo_state.dagster_home,
        workspace=ROOT / "workspace.yaml",
        replication_config=demo_state.mirror_config,
        log_path=tmp_path_factory.mktemp("webserver") / "dagster-webserver.log",
        timeout_s=WEBSERVER_TIMEOUT_S,
    ) as url:
        yield url
