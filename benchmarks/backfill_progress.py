"""What an operator sees during a long backfill: the live display on a terminal and the plain progress lines.

Builds a source repository of ``--objects`` objects (default 200,000), defines two mirrors of it in region-c,
and runs ``lakefs-mirror sync --once`` for both at the same time, as an operator would: one on a
pseudo-terminal (the live display), one with stderr in a pipe (``--progress lines``). It prints when each
form first showed progress, the longest silence, the screen at a few moments of the run, and the first and
last plain lines. Both captures are written to ``--out``. Goal: progress within 10 s of the start, and never
silent for more than twice ``--progress-every`` until the end.

    .venv/bin/python benchmarks/backfill_progress.py [--objects 200000] [--out DIR] [--quick] [--build links|ranges]
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from _environment import MIRROR, SOURCE, bench_environment, create_mirror, service_config
from _machine import machine_load
from _repositories import add_build_argument, build_repository
from _tree import REPO_ROOT
from lakefs_mirror_devenv.terminal import TerminalRun, run_in_terminal

FIRST_PROGRESS_GOAL_S = 10.0


def _cli(config: Path, mirror: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(config), "sync", "--once",
            "--mirror", mirror, *extra]  # fmt: skip


def _lines_in_a_pipe(argv: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, list[tuple[float, str]]]:
    """Run ``argv`` with stderr in a pipe; every stderr line with the second it arrived."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.monotonic() - started, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    return code, lines


def _longest_gap(times: list[float], end: float) -> float:
    """The longest time without progress, from the first report to the end (0 when there was none)."""
    marks = [*times, end] if times else []
    return max((b - a for a, b in itertools.pairwise(marks)), default=0.0)


def _report_terminal(run: TerminalRun, seconds: float, every_s: float) -> None:
    first = run.first_seconds(r"objects")
    updates = sorted({round(at, 1) for at, chunk in run.chunks if "objects" in chunk})
    print(f"\n[terminal] exit {run.returncode}, {seconds:.0f}s, {len(run.chunks)} redraws")
    verdict = "meets" if first is not None and first <= FIRST_PROGRESS_GOAL_S else "misses"
    print(f"  first progress on screen after {first if first is None else round(first, 1)}s "
          f"({verdict} goal <= {FIRST_PROGRESS_GOAL_S:.0f}s)")  # fmt: skip
    gap = _longest_gap(updates, seconds)
    print(f"  longest time without a redraw of the progress, after the first: {gap:.1f}s (goal <= {2 * every_s:.0f}s)")
    for at in sorted({5.0, 60.0, seconds / 4, seconds / 2, 3 * seconds / 4, seconds}):
        print(f"  t+{at:7.1f}s  {run.screen_at(at)}")


def _report_lines(code: int, lines: list[tuple[float, str]], seconds: float, every_s: float) -> None:
    progress = [(at, line) for at, line in lines if "lakefs_mirror_dagster.progress" in line]
    print(f"\n[plain lines] exit {code}, {seconds:.0f}s, {len(progress)} progress lines")
    first = progress[0][0] if progress else None
    verdict = "meets" if first is not None and first <= FIRST_PROGRESS_GOAL_S else "misses"
    print(f"  first line after {first if first is None else round(first, 1)}s "
          f"({verdict} goal <= {FIRST_PROGRESS_GOAL_S:.0f}s)")  # fmt: skip
    gap = _longest_gap([at for at, _ in progress], seconds)
    print(f"  longest silence after the first line: {gap:.1f}s (goal <= {2 * every_s:.0f}s)")
    for at, line in progress[:2] + progress[-2:]:
        print(f"  t+{at:7.1f}s  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=200_000)
    parser.add_argument("--object-size", type=int, default=1024, help="bytes per object")
    parser.add_argument("--progress-every", type=float, default=10.0, help="as sync --progress-every")
    parser.add_argument("--out", type=Path, default=Path("backfill-progress"), help="where the captures go")
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds each sync may take")
    parser.add_argument("--quick", action="store_true", help="20,000 objects")
    add_build_argument(parser)
    args = parser.parse_args()
    if args.quick:
        args.objects = min(args.objects, 20_000)
    if min(args.objects, args.object_size) < 1 or args.progress_every <= 0:
        parser.error("counts, sizes and --progress-every must be positive")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"start: {machine_load()}")
    with bench_environment() as env:
        built = build_repository(
            env, SOURCE, objects=args.objects, object_size=args.object_size, method=args.build
        )
        on_terminal, in_a_pipe = create_mirror(env, built.name), create_mirror(env, built.name)
        config = service_config(env, MIRROR)
        child_env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
                         COLUMNS="150", TERM="xterm")  # fmt: skip
        every = ("--progress-every", str(args.progress_every))
        print(f"[backfill] {args.objects:,} objects into two mirrors at once ({machine_load()})", flush=True)
        result: dict[str, object] = {}

        def terminal() -> None:
            started = time.monotonic()
            run = run_in_terminal(_cli(config, on_terminal, *every), env=child_env, timeout_s=args.timeout)
            result["terminal"] = (run, time.monotonic() - started)

        thread = threading.Thread(target=terminal)
        thread.start()
        started = time.monotonic()
        code, lines = _lines_in_a_pipe(_cli(config, in_a_pipe, "--progress", "lines", *every), child_env, args.timeout)
        lines_s = time.monotonic() - started
        thread.join()
        # written before the environment is torn down (deleting 400,000 objects' files takes minutes)
        run, terminal_s = result["terminal"]  # type: ignore[misc]
        (args.out / "terminal.txt").write_text("".join(chunk for _, chunk in run.chunks))
        (args.out / "lines.txt").write_text("".join(f"t+{at:8.1f}s {line}\n" for at, line in lines))
        _report_terminal(run, terminal_s, args.progress_every)
        _report_lines(code, lines, lines_s, args.progress_every)
        print(f"\ncaptures in {args.out}/ (terminal.txt replays with `cat`); end: {machine_load()}")
    if run.returncode != 0 or code != 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
