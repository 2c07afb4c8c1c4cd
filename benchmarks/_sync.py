"""A sync pass measured: in this process, with where its time went (``StageClock``), or in a child process with
its own peak RSS.

Also runnable as the child process that syncs one mirror (so a benchmark can read its peak RSS):

    .venv/bin/python benchmarks/_sync.py sync --config replication-region-c.yaml --mirror NAME
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _tree  # noqa: F401  (this tree's package first on sys.path, before anything imports it)
from _child import run_child
from _environment import SOURCE

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import MirrorSyncResult

__all__ = [
    "STAGES",
    "ChildSync",
    "StageClock",
    "format_stages",
    "run_sync",
    "sync_in_child",
]


#: The stages of a sync pass ``StageClock`` tells apart, in the order they run.
STAGES = ("plan", "range reads", "transfer", "validation", "promotion")


class StageClock:
    """Where a sync pass's time went, read from the engine's progress snapshots (``ProgressReporter``: with
    ``EVERY_S`` 0, one at each event the engine reports, and a heartbeat every 0.5 s in between): ``plan``
    (ref started -> its new ranges planned: log, metarange, cached-range checks), ``range reads`` (-> the first
    object done: the first ranges read and diffed), ``transfer`` (-> validation starts; later range reads
    overlap it), ``validation`` (-> the last validation ends: a history is validated a window of commits at a
    time, its transfers in between), ``promotion`` (-> ref done: commit records, ref move). Stages with no mark
    (nothing to copy) count 0. Meant for one-ref passes."""

    #: Every event: a stage that starts and ends between two snapshots (a validation shorter than the beat)
    #: would leave no mark. It costs the syncing process a snapshot per object: 4 µs, 43 ms of CPU per 10,000
    #: objects against 7 s for their backfill.
    EVERY_S = 0.0

    def __init__(self) -> None:
        self._marks: dict[str, float] = {}
        self._validating = False
        self._lock = threading.Lock()

    def __call__(self, progress: Any) -> None:
        now = time.monotonic()
        seen = [
            ("start", bool(progress.refs_in_flight) or progress.refs_done > 0),
            ("planned", progress.ranges_planned > 0),
            ("first object", progress.objects_done > 0),
            ("validating", progress.validating > 0),
            ("validated", "validating" in self._marks and progress.validating == 0),
            ("done", progress.refs_done > 0),
        ]
        with self._lock:
            for mark, reached in seen:
                if mark == "validated":  # each time a validation ends: the last window's end, not the first's
                    if reached and self._validating and "done" not in self._marks:
                        self._marks[mark] = now
                elif reached:
                    self._marks.setdefault(mark, now)
            self._validating = progress.validating > 0

    def split(self) -> dict[str, float]:
        """Seconds per stage (``STAGES``); a missing mark takes the time of the one before it."""
        order = ["start", "planned", "first object", "validating", "validated", "done"]
        with self._lock:
            marks = dict(self._marks)
        if "start" not in marks:
            return dict.fromkeys(STAGES, 0.0)
        times = []
        for mark in order:
            times.append(marks.get(mark, times[-1] if times else marks["start"]))
        return {stage: max(0.0, b - a) for stage, a, b in zip(STAGES, times[:-1], times[1:], strict=True)}


def format_stages(stages: dict[str, float]) -> str:
    return ", ".join(f"{stage} {stages.get(stage, 0.0):.1f}s" for stage in STAGES)


def run_sync(
    config: Path, mirror: str, *, stages: StageClock | None = None
) -> tuple[float, MirrorSyncResult, dict[str, int]]:
    """One sync pass of ``mirror`` in this process: seconds, result, and metadata files read from the source;
    ``stages`` hears the pass's progress (``StageClock.split`` afterwards)."""
    service = ReplicationService(load_config(config, env={}))
    if stages is not None:
        service.on_progress(stages, every_s=StageClock.EVERY_S)
    try:
        started = time.monotonic()
        [result] = service.sync(name=mirror)
        seconds = time.monotonic() - started
        reads = dict(service.client(SOURCE).metadata_reads)
    finally:
        service.close()
    if not result.ok:
        raise RuntimeError(f"sync of {mirror} failed: {json.dumps(result.to_json())[:3000]}")
    return seconds, result, reads


@dataclass
class ChildSync:
    """What a sync in a child process did, with the child's own resource usage."""

    seconds: float
    peak_rss_bytes: int
    cpu_seconds: float
    result: dict[str, Any]


def sync_in_child(config: Path, mirror: str, *, timeout_s: float = 3600.0) -> ChildSync:
    """Run one ``ReplicationService.sync`` of ``mirror`` in a fresh Python process; report its peak RSS (the
    child's own ``VmHWM``), CPU time and wall time.

    Not ``ru_maxrss``: Linux records the RSS of the memory a child had before ``exec`` (the parent's, shared
    after ``fork``/``vfork``) in its ``ru_maxrss``, so a benchmark that built large objects in memory measured
    itself: 20 x 64 MiB "peaked" at 1.28 GB whatever the child did."""
    argv = [sys.executable, str(Path(__file__).resolve()), "sync", "--config", str(config), "--mirror", mirror]
    run = run_child(argv, timeout_s=timeout_s, what=f"sync of {mirror}")
    if run.returncode != 0:
        raise RuntimeError(f"sync child failed ({run.returncode}): {run.stderr[-3000:]}")
    result = json.loads(run.stdout)
    return ChildSync(run.seconds, result["peak_rss_bytes"], run.cpu_seconds, result)


def _own_peak_rss() -> int:
    """This process's peak RSS since its ``exec`` (``VmHWM``; see ``sync_in_child`` for why not ``ru_maxrss``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # not Linux: the best there is


def _child_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="_sync.py sync")
    parser.add_argument("command", choices=["sync"])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--mirror", required=True)
    args = parser.parse_args(argv)
    clock = StageClock()
    seconds, result, reads = run_sync(args.config, args.mirror, stages=clock)
    stats = [r.stats for r in result.refs]
    summary = {
        "seconds": seconds,
        "stages": clock.split(),
        "objects_copied": sum(s.objects_copied for s in stats),
        "bytes_copied": sum(s.bytes_copied for s in stats),
        "ranges_validated": sum(s.ranges_validated for s in stats),
        "metadata_reads": reads,
        "peak_rss_bytes": _own_peak_rss(),
        "copies_in_flight": result.to_json().get("copies_in_flight"),  # absent before transfer.concurrency auto
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    _child_main(sys.argv[1:])
