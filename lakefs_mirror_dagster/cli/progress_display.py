"""How ``lakefs-mirror sync`` shows progress: a live ``rich`` display on a terminal, plain lines otherwise.

The engine's ``ProgressReporter`` hands snapshots to whichever sink is chosen here. On a terminal (and without
``--json``), one bar per mirror: objects done of planned, bytes copied, rate, time left. Anywhere else (a log
file, a pipe, ``--json`` whose stdout a program reads), one log record per ``every_s`` seconds on the logger
``lakefs_mirror_dagster.progress``, in the configured ``logging`` format, so a long backfill is never silent and
a stuck one is told apart from a slow one.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, TextIO

from ..logs import log_fields
from ..replication.progress import Progress, ProgressListener

__all__ = ["PLAIN_EVERY_S", "ProgressMode", "progress_sink"]

#: Progress lines are log records of their own logger, so they follow ``logging`` (level, text or JSON lines).
log = logging.getLogger("lakefs_mirror_dagster.progress")

ProgressMode = Literal["auto", "bar", "lines", "off"]
#: Seconds between plain progress lines.
PLAIN_EVERY_S = 10.0


@contextmanager
def progress_sink(
    mode: ProgressMode, *, json_output: bool, stream: TextIO | None = None, every_s: float = PLAIN_EVERY_S
) -> Iterator[tuple[ProgressListener, float] | None]:
    """The listener (and how often it wants snapshots) for ``mode``; ``auto`` picks the bar on a terminal
    without ``--json``, else lines. None for ``off``. The bar is stopped when the block ends."""
    stream = stream or sys.stderr
    if mode == "off":
        yield None
        return
    if mode == "bar" or (mode == "auto" and not json_output and stream.isatty()):
        with _bars(stream) as listener:
            yield listener, 0.5
        return

    def line(progress: Progress) -> None:
        log.info("%s", progress.line(), extra=log_fields(mirror=progress.mirror))

    yield line, every_s


@contextmanager
def _bars(stream: TextIO) -> Iterator[ProgressListener]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import (
        Progress as RichProgress,
    )

    display = RichProgress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("objects, {task.fields[detail]}"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=Console(file=stream),
    )
    tasks: dict[str, Any] = {}
    lock = threading.Lock()

    def update(progress: Progress) -> None:
        detail = (
            f"ranges {progress.ranges_done}/{progress.ranges_planned}, "
            f"{progress.bytes_done / 1e6:.1f} MB copied at {progress.bytes_per_second / 1e6:.1f} MB/s"
            + (f", validating {progress.validating} range(s)" if progress.validating else "")
            + (f", {len(progress.refs_in_flight)} ref(s) syncing" if progress.refs_in_flight else "")
        )
        with lock:
            if progress.mirror not in tasks:
                tasks[progress.mirror] = display.add_task(progress.mirror, total=None, detail="")
            display.update(
                tasks[progress.mirror],
                total=max(progress.objects_planned, 1),
                completed=progress.objects_done,
                detail=detail,
            )

    with display:
        yield update
