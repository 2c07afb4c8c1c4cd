"""``lakefs-mirror sync`` is never silent: a live display on a terminal (run here under a pseudo-terminal), and
progress log records on stderr otherwise, also with ``--json`` (whose stdout stays one JSON document per mirror).

The source is written with boto3 through region-a's S3 gateway; each mirror goes to region-c (MinIO).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from lakefs_mirror_devenv.terminal import run_in_terminal

from tests.cli_process import run_cli

from .outside import RegionClients
from .users import blob, put

pytestmark = pytest.mark.integration

OBJECTS = 240
_CHECKOUT = Path(__file__).resolve().parents[2]


def _source(clients_for: Callable[[str], RegionClients], new_repo: Callable[..., str]) -> str:
    src = clients_for("region-a")
    repo = new_repo()

    def write(i: int) -> None:
        put(src.s3, repo, "main", f"logs/part-{i:04}.json", blob(f"p{i}", 2000))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(write, range(OBJECTS)))
    src.rest.commit(repo, "main", f"{OBJECTS} objects")
    return repo


def _in_terminal(args: list[str], timeout_s: float = 120) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a pseudo-terminal (as in an operator's shell); its exit code and
    everything it drew."""
    env = dict(os.environ, PYTHONPATH=str(_CHECKOUT), COLUMNS="160", TERM="xterm")
    run = run_in_terminal([sys.executable, "-m", "lakefs_mirror_dagster.cli", *args], env=env, timeout_s=timeout_s)
    return run.returncode, run.text


def test_sync_shows_a_live_display_on_a_terminal_and_progress_lines_elsewhere(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    config_path: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    repo = _source(clients_for, new_repo)
    config = str(config_path("region-c"))

    on_terminal = new_mirror(repo, "region-c")
    code, plain = _in_terminal(["--config", config, "sync", "--once", "--mirror", on_terminal])
    assert code == 0, plain[-3000:]
    assert f"{OBJECTS}/{OBJECTS} objects" in plain, plain[-2000:]
    assert "ranges 1/1" in plain and "MB copied" in plain
    assert "━" in plain  # the bar itself
    print(f"\n[the terminal showed, last frame]\n{plain.strip().splitlines()[-3:]}")

    in_a_pipe = new_mirror(repo, "region-c")
    done = run_cli(
        "--config", config, "sync", "--once", "--json", "--mirror", in_a_pipe, "--progress-every", "0.05", cwd=tmp_path
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [result] = [json.loads(line) for line in done.stdout.splitlines()]  # stdout: the JSON documents only
    assert result["mirror"] == in_a_pipe and result["ok"]
    # progress lines are log records (text format here): the logger's name, the line, the mirror as context
    lines = [line for line in done.stderr.splitlines() if " INFO lakefs_mirror_dagster.progress: " in line]
    assert lines, done.stderr
    assert f"objects {OBJECTS}/{OBJECTS}" in lines[-1] and "1 ref(s) done" in lines[-1], lines[-1]
    assert all(f"mirror {in_a_pipe}:" in line and f"[mirror={in_a_pipe}]" in line for line in lines)
