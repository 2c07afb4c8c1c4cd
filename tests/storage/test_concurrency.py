"""``transfer.concurrency``: a fixed number of copies in flight stays exact; ``auto`` follows the source reads'
round trip (Little's law, ``storage/concurrency.py``). Round trips here are injected (a clock that each read moves
forward), never measured on the machine's own clock."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import BinaryIO

import pytest

from lakefs_mirror_dagster.storage import (
    AUTO_CAP,
    AUTO_START,
    CopiesInFlight,
    CopyTask,
    LocalBlockstore,
    TransferPool,
)

from .test_transfer import Wrapped, make_objects

#: How long a blocked read waits for the crowd it expects before it goes on anyway (a bound, never a measure).
_CROWD_WAIT_S = 30.0


def window(limit: CopiesInFlight, *seconds: float) -> None:
    """Tell ``limit`` of a full window of reads: the times given, then the first one again up to 16 reads."""
    times = list(seconds) + [seconds[0]] * (16 - len(seconds))
    for s in times:
        limit.observe(s)


@pytest.mark.parametrize(
    ("round_trip_ms", "copies"),
    [(0.3, 16), (5, 16), (10, 16), (20, 32), (40, 64), (80, 128), (200, 128)],
)
def test_auto_keeps_16_copies_in_flight_per_10ms_of_round_trip_between_16_and_128(
    round_trip_ms: float, copies: int
) -> None:
    limit = CopiesInFlight("auto")
    assert limit.limit == AUTO_START == 16  # before any read is measured
    for _ in range(4):
        window(limit, round_trip_ms / 1000)
    assert limit.limit == copies
    assert limit.take_figures().round_trip_seconds == pytest.approx(round_trip_ms / 1000)


def test_auto_grows_by_doubling_once_per_window_and_falls_at_once() -> None:
    limit = CopiesInFlight("auto")
    for _ in range(15):
        limit.observe(0.08)
    assert limit.limit == 16  # a window is not full yet
    limit.observe(0.08)
    seen = [limit.limit]
    for _ in range(3):
        window(limit, 0.08)
        seen.append(limit.limit)
    assert seen == [32, 64, 128, 128]
    window(limit, 0.001)  # the source answered at once: the link is short after all
    assert limit.limit == AUTO_START


def test_auto_follows_the_quickest_read_not_the_queued_ones() -> None:
    """Reads that waited (for the GIL, a core, a connection, the source's queue) do not push the limit up: within
    a window the quickest counts, and a later window never raises the round trip an earlier one measured."""
    limit = CopiesInFlight("auto")
    window(limit, 0.9, 0.5, 0.2, 0.040)  # 15 slow reads and one at 40 ms: the link is 40 ms away
    window(limit, 0.9)
    assert limit.limit == 64
    for _ in range(5):  # more copies, more waiting: every read of these windows was slow
        window(limit, 0.140)
    assert limit.limit == 64
    assert limit.take_figures().round_trip_seconds == pytest.approx(0.040)


def test_a_loaded_machine_next_to_its_source_stays_at_16() -> None:
    """The feedback ``auto`` must not fall into: a quick read first, then reads slowed by the copies' own load."""
    limit = CopiesInFlight("auto")
    window(limit, 0.030, 0.004)
    for _ in range(5):
        window(limit, 0.140)
    assert limit.limit == AUTO_START


def test_a_fixed_number_never_moves_whatever_the_round_trip() -> None:
    limit = CopiesInFlight(16)
    window(limit, 0.2)
    assert limit.limit == 16
    figures = limit.take_figures()
    assert (figures.limit, figures.auto, figures.round_trip_seconds) == (16, False, 0.2)  # measured all the same


@pytest.mark.parametrize("bad", [0, -3, "fast", True, 2.5])
def test_bad_concurrency_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="at least 1 or 'auto'"):
        CopiesInFlight(bad)  # type: ignore[arg-type]


class FarSource(Wrapped):
    """A source a round trip away on an injected clock: answering a read moves the reading thread's clock by
    ``rtt``. A read's body is held until ``crowd`` reads are open at once (or, bounded, until it waits no more),
    so the pool's copies certainly overlap, on any machine; ``max_open`` is the most that were open at once."""

    def __init__(self, inner: LocalBlockstore, *, rtt: float, crowd: int) -> None:
        super().__init__(inner)
        self.rtt, self.crowd = rtt, crowd
        self._now = threading.local()
        self._lock = threading.Lock()
        self._crowded = threading.Event()
        self.open = self.max_open = 0

    def clock(self) -> float:
        return float(getattr(self._now, "t", 0.0))

    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        self._now.t = self.clock() + self.rtt
        stream = self.inner.open_read(uri)
        with self._lock:
            self.open += 1
            self.max_open = max(self.max_open, self.open)
            if self.open >= self.crowd:
                self._crowded.set()
        source = self

        class Held:  # the body: its first read waits for the crowd, its close counts it out
            def read(self, n: int = -1) -> bytes:
                source._crowded.wait(_CROWD_WAIT_S)
                return stream.read(n)

            def close(self) -> None:
                stream.close()
                with source._lock:
                    source.open -= 1

            def __enter__(self) -> Held:
                return self

            def __exit__(self, *exc: object) -> None:
                self.close()

        return Held()  # type: ignore[return-value]


def far_copies(tmp_path: Path, count: int, *, rtt: float, crowd: int) -> tuple[FarSource, list[CopyTask]]:
    local = LocalBlockstore(root=tmp_path / "src")
    objects = make_objects(local, count)
    source = FarSource(local, rtt=rtt, crowd=crowd)
    dst = LocalBlockstore(root=tmp_path / "dst")
    return source, [CopyTask(source, uri, dst, uri.replace("/src/", "/dst/")) for uri in objects]


def test_auto_puts_more_than_16_copies_in_flight_over_an_80ms_link(tmp_path: Path) -> None:
    source, tasks = far_copies(tmp_path, 300, rtt=0.080, crowd=48)
    pool = TransferPool(concurrency="auto", allow_server_side=False, clock=source.clock)
    summary = pool.run(tasks)
    assert (summary.copied, summary.failed) == (300, [])
    figures = pool.in_flight.take_figures()
    assert figures.round_trip_seconds == pytest.approx(0.080)
    assert figures.limit == AUTO_CAP
    assert source.max_open >= 48 and figures.peak >= 48  # the first 16 reads measured the link; more followed


def test_an_explicit_16_stays_exactly_16_over_the_same_link(tmp_path: Path) -> None:
    source, tasks = far_copies(tmp_path, 120, rtt=0.080, crowd=16)
    pool = TransferPool(concurrency=16, allow_server_side=False, clock=source.clock)
    summary = pool.run(tasks)
    assert (summary.copied, summary.failed) == (120, [])
    figures = pool.in_flight.take_figures()
    assert (figures.limit, figures.peak, source.max_open) == (16, 16, 16)
    assert figures.round_trip_seconds == pytest.approx(0.080)


def test_figures_say_what_was_chosen_and_from_what() -> None:
    limit = CopiesInFlight("auto")
    window(limit, 0.083)
    with limit.slot():
        line = limit.take_figures().describe()
    assert line == (
        "object copies in flight: up to 32 (transfer.concurrency auto: 16 per 10 ms, at most 128), 1 at most at "
        "once; source reads' round trip 83 ms (the quickest read)"
    )
