"""The pass schedule of a long-running sync (``lakefs-mirror sync``): which pass runs when.

Full passes every ``commit_sensor.process_branches_duration``; between them, every ``validator.run_interval``, a
retry pass over the blocked branches whose cooldown has ended; with ``hooks.enabled``, every
``hooks.poll_interval``, a pass over the refs lakeFS hooks queued (``hooks.py``). Intervals run from the end of
a pass. The caller prints what each pass yields.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..replication import MirrorSyncResult
from .hooks import WokenMirror, sync_woken, wait_woken

if TYPE_CHECKING:
    from .service import ReplicationService

__all__ = ["ScheduledPass", "sync_passes", "wait_for_pass"]


@dataclass(frozen=True)
class ScheduledPass:
    """One pass's results; ``full`` when it covered every mirror (named ones: a mirror missing from a full pass
    does not exist in this region)."""

    results: list[MirrorSyncResult]
    full: bool


def wait_for_pass(service: ReplicationService, until: float, *, name: str | None = None) -> list[WokenMirror]:
    """Sleep until ``until`` (monotonic), or with ``hooks.enabled`` until the wake-up queue names refs of this
    region's mirrors (only ``name``, if given): those mirrors, or [] when the time came."""
    if not service.config.hooks.enabled:
        time.sleep(max(0.0, until - time.monotonic()))
        return []
    return wait_woken(service, until, name=name)


def sync_passes(
    service: ReplicationService, *, passes: int, name: str | None = None, branches: Sequence[str] = ()
) -> Generator[ScheduledPass]:
    """Run up to ``passes`` passes of ``service`` on the schedule above (the first one at once, full), yielding
    each; stop by closing the generator."""
    full_every = service.config.commit_sensor.process_branches_duration.total_seconds()
    retry_every = service.config.validator.run_interval.total_seconds()
    next_full = next_retry = time.monotonic()
    for n in range(passes):
        woken = wait_for_pass(service, min(next_full, next_retry), name=name) if n else []
        if woken:
            yield ScheduledPass(sync_woken(service, woken, branches=branches), full=False)
            continue
        full = time.monotonic() >= next_full
        results = service.sync(name=name, branches=list(branches) or None, due_only=not full)
        done = time.monotonic()
        next_full, next_retry = (done + full_every if full else next_full), done + retry_every
        yield ScheduledPass(results, full=full)
