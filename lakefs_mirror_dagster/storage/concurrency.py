"""How many object copies a ``TransferPool`` runs at once: a fixed number, or ``auto``, which follows the link.

A copy of a small object spends most of its time waiting for the source's first byte, a round trip away. By
Little's law the copies in flight are the copies per second times the seconds each takes, so the rate that 16
copies reach on a local link needs more copies in flight over a longer round trip (issue 34; the figures are in
benchmarks/README.md). ``auto`` holds ``AUTO_START`` copies in flight per
``REFERENCE_SECONDS`` of the source reads' round trip (a target of 1,600 reads a second), never fewer than
``AUTO_START`` and never more than ``AUTO_CAP``: 16 on a local link, 32 at 20 ms, 128 from 80 ms.

The round trip is measured on the reads the copies make anyway (no request of its own): the time from asking the
source for an object to its answer's first byte (``Blockstore.open_read``), the quickest read of the pool so far
(one pool per engine, so per pass). The quickest, because a read's time also holds waits the process causes itself
(for the GIL, a core, a connection, the source's queue), which grow with the copies in flight: a typical read's
time would feed back into more copies, more waiting and more copies again (a loaded machine next to its source
went to 128 copies that way). The quickest read is the link plus the source's own time, and it
can only fall as copies are added. After every ``WINDOW`` reads the limit moves to what the rule says, up by at
most doubling (so a first window that met a slow start overshoots by one step at most), down at once. Memory
stays bounded by the pool's byte budget (``transfer.max_bytes_in_flight``) whatever the limit.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from ..config import AUTO, Concurrency

__all__ = [
    "AUTO_CAP",
    "AUTO_START",
    "REFERENCE_SECONDS",
    "WINDOW",
    "CopiesInFlight",
    "InFlightFigures",
    "fixed_workers",
]

log = logging.getLogger(__name__)

#: ``auto``: the copies in flight before the first round trip is measured, and the fewest ever.
AUTO_START = 16
#: ``auto``: the most copies in flight (threads and connections to the source, each mostly waiting).
AUTO_CAP = 128
#: ``auto``: the round trip at which ``AUTO_START`` copies are enough; each more of it adds as many again.
REFERENCE_SECONDS = 0.010
#: Reads between two settings of the limit.
WINDOW = 16

_T = TypeVar("_T")


def fixed_workers(concurrency: Concurrency) -> int:
    """Threads for work beside the copies that follows ``transfer.concurrency`` without measuring a round trip of
    its own (HEADs of metadata files, garbage collection's HEADs and deletions, scrub's reads): the number itself, or
    ``AUTO_START`` for ``auto``."""
    return AUTO_START if concurrency == AUTO else int(concurrency)


@dataclass(frozen=True)
class InFlightFigures:
    """What a pool's copies did since the last look: the most at once (``peak``), the limit now, whether it is
    ``auto``, and the round trip of the source reads: the quickest so far (seconds; None before ``WINDOW`` reads)."""

    peak: int
    limit: int
    auto: bool
    round_trip_seconds: float | None

    def describe(self) -> str:
        """One line for the pass's log: what was chosen, from what."""
        rtt = "not measured" if self.round_trip_seconds is None else f"{self.round_trip_seconds * 1000:.0f} ms"
        how = f"auto: {AUTO_START} per {REFERENCE_SECONDS * 1000:g} ms, at most {AUTO_CAP}" if self.auto else "fixed"
        return (
            f"object copies in flight: up to {self.limit} (transfer.concurrency {how}), {self.peak} at most at once; "
            f"source reads' round trip {rtt} (the quickest read)"
        )


class CopiesInFlight:
    """The copies a pool lets run at once (``slot``), fixed or following the reads it is told of (``observe``).

    ``clock`` times the reads (``timed``); tests inject one."""

    def __init__(self, concurrency: Concurrency, *, clock: Callable[[], float] = time.monotonic) -> None:
        if concurrency != AUTO and (type(concurrency) is not int or concurrency < 1):
            raise ValueError(f"TransferPool concurrency must be at least 1 or 'auto', got {concurrency!r}")
        self.auto = concurrency == AUTO
        #: The limit's bounds: equal for a fixed number, which then never moves.
        self.start = AUTO_START if self.auto else int(concurrency)
        self.cap = AUTO_CAP if self.auto else int(concurrency)
        self.clock = clock
        self._cond = threading.Condition()
        self._limit = self.start
        self._active = 0
        self._peak = 0
        self._round_trip: float | None = None
        self._window: list[float] = []
        #: Conditions to notify when the limit changes (``watching``: runs waiting for room to submit more).
        self._watchers: list[threading.Condition] = []

    @property
    def limit(self) -> int:
        """The copies allowed at once now."""
        return self._limit

    def rule(self, round_trip: float) -> int:
        """Little's law: ``AUTO_START`` per ``REFERENCE_SECONDS`` of round trip, within [start, cap]."""
        return max(self.start, min(self.cap, math.ceil(AUTO_START * round_trip / REFERENCE_SECONDS - 1e-9)))

    def observe(self, seconds: float) -> None:
        """One source read took ``seconds`` to its first byte; every ``WINDOW`` reads the limit is set anew from
        the quickest read so far: the rule's number, or twice the limit if that is less."""
        with self._cond:
            self._window.append(max(seconds, 0.0))
            if len(self._window) < WINDOW:
                return
            quickest = min(self._window)
            self._round_trip = quickest if self._round_trip is None else min(self._round_trip, quickest)
            self._window = []
            chosen = min(self.rule(self._round_trip), 2 * self._limit)
            if chosen == self._limit:
                return
            log.debug("copies in flight %d -> %d (round trip %.1f ms)", self._limit, chosen, self._round_trip * 1e3)
            self._limit = chosen
            self._cond.notify_all()
            watchers = list(self._watchers)
        for watcher in watchers:  # outside this lock: a watcher's own lock is taken before reading ``limit``
            with watcher:
                watcher.notify_all()

    def timed(self, read: Callable[[], _T]) -> _T:
        """``read()`` (a source read up to its first byte), its time observed when it succeeds."""
        started = self.clock()
        result = read()
        self.observe(self.clock() - started)
        return result

    @contextmanager
    def watching(self, condition: threading.Condition) -> Iterator[None]:
        """``condition`` is notified whenever the limit changes, for the ``with`` block."""
        with self._cond:
            self._watchers.append(condition)
        try:
            yield
        finally:
            with self._cond:
                self._watchers.remove(condition)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Wait until fewer than ``limit`` copies run, and count this one as running for the ``with`` block."""
        with self._cond:
            self._cond.wait_for(lambda: self._active < self._limit)
            self._active += 1
            self._peak = max(self._peak, self._active)
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify()

    def take_figures(self) -> InFlightFigures:
        """The figures since the last call (the peak then starts again from the copies running now)."""
        with self._cond:
            figures = InFlightFigures(self._peak, self._limit, self.auto, self._round_trip)
            self._peak = self._active
            return figures
