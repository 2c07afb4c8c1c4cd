"""Progress of one engine's work, so a long backfill is never silent: ranges, objects and bytes done of planned.

The engine plans a commit's new ranges from its metarange, whose records carry each range's object count, so
the object total is known before the first object is copied. Bytes are counted as they are copied, with no
total: a metarange records the size of each range *file*, not of the objects it lists. Objects count as they finish on the
copy pool; the ranges of a batch that ran elsewhere (Spark) count when the batch returns. Counters are shared
by the engine's branch threads (one lock). A listener (the CLI's display, a Dagster run's log) gets a snapshot
at most every ``every_s`` seconds, plus one when a ref finishes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..graveler.records import RangeRef

__all__ = ["Progress", "ProgressListener", "ProgressReporter"]


@dataclass(frozen=True)
class Progress:
    """A snapshot: what is planned so far, what is done, and since when."""

    mirror: str
    refs_in_flight: tuple[str, ...] = ()
    refs_done: int = 0
    ranges_planned: int = 0
    ranges_done: int = 0
    objects_planned: int = 0
    objects_done: int = 0
    bytes_done: int = 0
    elapsed_seconds: float = 0.0

    @property
    def bytes_per_second(self) -> float:
        """Bytes copied per second so far (objects already present cost no bytes)."""
        return self.bytes_done / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds left at the rate so far (by objects when sizes are not known yet); None before any rate."""
        if self.objects_done == 0 or self.elapsed_seconds <= 0:
            return None
        left = max(0, self.objects_planned - self.objects_done)
        return left * self.elapsed_seconds / self.objects_done

    def line(self) -> str:
        """One plain line for logs and non-terminal output."""
        eta = self.eta_seconds
        refs = ", ".join(self.refs_in_flight[:3]) + (" ..." if len(self.refs_in_flight) > 3 else "")
        return (
            f"mirror {self.mirror}: ranges {self.ranges_done}/{self.ranges_planned}, "
            f"objects {self.objects_done}/{self.objects_planned}, "
            f"{_mb(self.bytes_done)} MB copied, "
            f"{_mb(self.bytes_per_second):.1f} MB/s, "
            f"eta {'-' if eta is None else f'{eta:.0f}s'}, {self.elapsed_seconds:.0f}s elapsed"
            + (f", syncing {refs}" if refs else "")
            + (f", {self.refs_done} ref(s) done" if self.refs_done else "")
        )


ProgressListener = Callable[[Progress], None]


def _mb(n: float) -> float:
    return round(n / 1e6, 1)


class ProgressReporter:
    """Thread-safe counters of one engine's pass (see the module docstring)."""

    def __init__(self, mirror: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.mirror = mirror
        self._clock = clock
        self._started = clock()
        self._state = Progress(mirror)
        #: Objects and bytes counted one by one since the batches running now began; a finished batch
        #: replaces its share of them by its exact figures.
        self._live_objects = 0
        self._live_bytes = 0
        self._listeners: list[list[Any]] = []  # [listener, every_s, last time told]
        self._lock = threading.Lock()

    def listen(self, listener: ProgressListener, *, every_s: float = 10.0) -> None:
        """Send snapshots to ``listener``, at most one per ``every_s`` seconds (and one per finished ref)."""
        self._listeners.append([listener, every_s, float("-inf")])

    def snapshot(self) -> Progress:
        with self._lock:
            return replace(
                self._state,
                objects_done=self._state.objects_done + self._live_objects,
                bytes_done=self._state.bytes_done + self._live_bytes,
                elapsed_seconds=self._clock() - self._started,
            )

    # ------------------------------------------------------------------ what the engine reports
    def ref_started(self, name: str) -> None:
        with self._lock:
            self._state = replace(self._state, refs_in_flight=(*self._state.refs_in_flight, name))

    def ref_finished(self, name: str) -> None:
        with self._lock:
            flying = list(self._state.refs_in_flight)
            if name in flying:
                flying.remove(name)
            self._state = replace(self._state, refs_in_flight=tuple(flying), refs_done=self._state.refs_done + 1)
        self._tell(force=True)

    def batch_planned(self, ranges: Iterable[RangeRef]) -> None:
        """Ranges about to be transferred, with the object counts their metarange records."""
        refs = list(ranges)
        with self._lock:
            s = self._state
            self._state = replace(
                s,
                ranges_planned=s.ranges_planned + len(refs),
                objects_planned=s.objects_planned + sum(r.count for r in refs),
            )
        self._tell()

    def object_done(self, copied_bytes: int) -> None:
        """One object copied (``copied_bytes``) or found present (0) on the copy pool."""
        with self._lock:
            self._live_objects += 1
            self._live_bytes += copied_bytes
        self._tell()

    def batch_done(self, *, ranges: int, objects: int, copied_bytes: int) -> None:
        """A batch returned with its exact figures: objects handled (copied, present or unchanged) and bytes
        copied, wherever it ran (a Spark transfer reports nothing one by one)."""
        with self._lock:
            s = self._state
            self._state = replace(
                s,
                ranges_done=s.ranges_done + ranges,
                objects_done=s.objects_done + objects,
                bytes_done=s.bytes_done + copied_bytes,
            )
            self._live_objects = max(0, self._live_objects - objects)
            self._live_bytes = max(0, self._live_bytes - copied_bytes)
        self._tell()

    def _tell(self, *, force: bool = False) -> None:
        if not self._listeners:
            return
        now = self._clock()
        due = [entry for entry in self._listeners if force or now - entry[2] >= entry[1]]
        if not due:
            return
        snapshot = self.snapshot()
        for entry in due:
            entry[2] = now
            entry[0](snapshot)
