"""Progress of one engine's work, so a long backfill is never silent: ranges, objects and bytes done of planned.

The engine plans a commit's new ranges from its metarange, whose records carry each range's object count, so
the object total is known before the first object is copied. Bytes are counted as they are copied, with no
total: a metarange records the size of each range *file*, not of the objects it lists. Objects count as they
finish on the copy pool; the ranges of a batch that ran elsewhere (Spark) count when the batch returns. Counters
are shared by the engine's branch threads (one lock), in all and per ref in flight. A listener (the CLI's display,
a Dagster run's log, the in-flight records of ``in_flight.py``) gets a snapshot at most every ``every_s`` seconds,
plus one when a ref finishes; a watcher hears each ref start and finish.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..graveler import RangeRef

__all__ = ["Progress", "ProgressListener", "ProgressReporter", "RefProgress"]


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
    #: Ranges whose objects have arrived and are being validated at the mirror now (the last, silent stage).
    validating: int = 0
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
            + (f", validating {self.validating} range(s)" if self.validating else "")
            + (f", syncing {refs}" if refs else "")
            + (f", {self.refs_done} ref(s) done" if self.refs_done else "")
        )


ProgressListener = Callable[[Progress], None]


def _mb(n: float) -> float:
    return round(n / 1e6, 1)


@dataclass(frozen=True)
class RefProgress:
    """One ref in flight: the source commit it is being advanced to and its own counters (``progress``, whose
    ``refs_in_flight`` is this ref alone)."""

    ref: str
    source_commit_id: str | None
    progress: Progress


class _Tally:
    """Counters of one scope (the whole pass, or one ref): objects and bytes counted one by one since the batches
    running now began, replaced by their exact figures when a batch returns."""

    def __init__(self, state: Progress) -> None:
        self.state = state
        self.live_objects = 0
        self.live_bytes = 0

    def planned(self, refs: Sequence[RangeRef]) -> None:
        s = self.state
        self.state = replace(
            s,
            ranges_planned=s.ranges_planned + len(refs),
            objects_planned=s.objects_planned + sum(r.count for r in refs),
        )

    def object_done(self, copied_bytes: int) -> None:
        self.live_objects += 1
        self.live_bytes += copied_bytes

    def validating(self, delta: int) -> None:
        self.state = replace(self.state, validating=max(0, self.state.validating + delta))

    def batch_done(self, ranges: int, objects: int, copied_bytes: int) -> None:
        s = self.state
        self.state = replace(
            s,
            ranges_done=s.ranges_done + ranges,
            objects_done=s.objects_done + objects,
            bytes_done=s.bytes_done + copied_bytes,
        )
        self.live_objects = max(0, self.live_objects - objects)
        self.live_bytes = max(0, self.live_bytes - copied_bytes)

    def snapshot(self, elapsed_seconds: float) -> Progress:
        return replace(
            self.state,
            objects_done=self.state.objects_done + self.live_objects,
            bytes_done=self.state.bytes_done + self.live_bytes,
            elapsed_seconds=elapsed_seconds,
        )


class ProgressReporter:
    """Thread-safe counters of one engine's pass, in all and per ref (see the module docstring)."""

    def __init__(self, mirror: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.mirror = mirror
        self._clock = clock
        self._started = clock()
        self._total = _Tally(Progress(mirror))
        #: The refs in flight: their tallies, target commits and when each started (``clock``).
        self._refs: dict[str, tuple[_Tally, str | None, float]] = {}
        self._listeners: list[list[Any]] = []  # [listener, every_s, last time told, told per ref]
        self._watchers: list[Callable[[], None]] = []
        self._heartbeat: threading.Thread | None = None
        #: Set to cut the heartbeat's pause short: a listener that wants snapshots more often has come.
        self._cadence_changed = threading.Event()
        self._lock = threading.Lock()

    def listen(self, listener: ProgressListener, *, every_s: float = 10.0, per_ref: bool = True) -> None:
        """Send snapshots to ``listener``, at most one per ``every_s`` seconds (and, with ``per_ref``, one per
        started or finished ref); while a ref is in flight, also when nothing moved (validation counts no objects),
        so a long stage is never silent."""
        self._listeners.append([listener, every_s, float("-inf"), per_ref])
        if self._heartbeat is None:
            self._heartbeat = threading.Thread(
                target=_heartbeat,
                args=(weakref.ref(self), self._cadence_changed),
                name="progress-heartbeat",
                daemon=True,
            )
            self._heartbeat.start()
        else:  # the heartbeat may be in a pause set for the listeners before this one
            self._cadence_changed.set()

    def watch_refs(self, watcher: Callable[[], None]) -> None:
        """Call ``watcher`` (no arguments, it must not block) whenever a ref starts or finishes."""
        self._watchers.append(watcher)

    def snapshot(self) -> Progress:
        with self._lock:
            return self._total.snapshot(self._clock() - self._started)

    def refs(self) -> list[RefProgress]:
        """Each ref in flight with its own counters, in the order they started."""
        now = self._clock()
        with self._lock:
            return [
                RefProgress(name, commit, tally.snapshot(now - started))
                for name, (tally, commit, started) in self._refs.items()
            ]

    # ------------------------------------------------------------------ what the engine reports
    def ref_started(self, name: str, *, source_commit: str | None = None) -> None:
        """Ref ``name`` (``"<kind> <name>"``) starts being advanced to ``source_commit``."""
        with self._lock:
            s = self._total.state
            self._total.state = replace(s, refs_in_flight=(*s.refs_in_flight, name))
            self._refs[name] = (_Tally(Progress(self.mirror, refs_in_flight=(name,))), source_commit, self._clock())
        self._tell_watchers()
        self._tell(force=True)  # at once: planning a large commit can take a while before the first copy

    def ref_finished(self, name: str) -> None:
        with self._lock:
            s = self._total.state
            flying = list(s.refs_in_flight)
            if name in flying:
                flying.remove(name)
            self._total.state = replace(s, refs_in_flight=tuple(flying), refs_done=s.refs_done + 1)
            self._refs.pop(name, None)
        self._tell_watchers()
        self._tell(force=True)

    def batch_planned(self, ranges: Iterable[RangeRef], *, ref: str | None = None) -> None:
        """Ranges about to be transferred (for ``ref``), with the object counts their metarange records."""
        refs = list(ranges)
        with self._lock:
            for tally in self._tallies(ref):
                tally.planned(refs)
        self._tell()

    def object_done(self, copied_bytes: int, *, ref: str | None = None) -> None:
        """One object copied (``copied_bytes``) or found present (0) on the copy pool (for ``ref``)."""
        with self._lock:
            for tally in self._tallies(ref):
                tally.object_done(copied_bytes)
        self._tell()

    def batch_done(self, *, ranges: int, objects: int, copied_bytes: int, ref: str | None = None) -> None:
        """A batch returned with its exact figures: objects handled (copied, present or unchanged) and bytes
        copied, wherever it ran (a Spark transfer reports nothing one by one)."""
        with self._lock:
            for tally in self._tallies(ref):
                tally.batch_done(ranges, objects, copied_bytes)
        self._tell()

    def validation_started(self, ranges: int, *, ref: str | None = None) -> None:
        """``ranges`` ranges (for ``ref``) are being validated at the mirror."""
        with self._lock:
            for tally in self._tallies(ref):
                tally.validating(ranges)
        self._tell()

    def validation_done(self, ranges: int, *, ref: str | None = None) -> None:
        with self._lock:
            for tally in self._tallies(ref):
                tally.validating(-ranges)
        self._tell()

    def _beat(self) -> float:
        """Tell the listeners that are due while a ref is in flight; seconds until the next beat."""
        with self._lock:
            flying = bool(self._refs)
        if flying:
            self._tell()
        return max(_MIN_BEAT_S, min((entry[1] for entry in self._listeners), default=_MIN_BEAT_S))

    def _tallies(self, ref: str | None) -> list[_Tally]:
        """The pass's tally and, for a ref in flight, the ref's own (under the lock)."""
        own = self._refs.get(ref) if ref is not None else None
        return [self._total] if own is None else [self._total, own[0]]

    def _tell_watchers(self) -> None:
        for watcher in self._watchers:
            watcher()

    def _tell(self, *, force: bool = False) -> None:
        if not self._listeners:
            return
        now = self._clock()
        due = [entry for entry in self._listeners if (force and entry[3]) or now - entry[2] >= entry[1]]
        if not due:
            return
        snapshot = self.snapshot()
        for entry in due:
            entry[2] = now
            entry[0](snapshot)


#: The shortest pause of the heartbeat thread (a listener may ask for snapshots every 0.1 s).
_MIN_BEAT_S = 0.5


def _heartbeat(reporter_ref: weakref.ref[ProgressReporter], cadence_changed: threading.Event) -> None:
    """Beat while the reporter exists; it holds no reference to it in between, so an engine that is done with
    its reporter lets it (and this thread) go. A pause ends early when a listener comes (``cadence_changed``)."""
    while (reporter := reporter_ref()) is not None:
        pause = reporter._beat()
        del reporter
        if cadence_changed.wait(pause):
            cadence_changed.clear()
