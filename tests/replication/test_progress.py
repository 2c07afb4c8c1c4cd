"""The engine's progress counters: planned from the metarange's counts, done as objects finish, exact when a
batch returns, and handed to listeners at their own cadence."""

from __future__ import annotations

import time

from lakefs_mirror_dagster.graveler.records import RangeRef
from lakefs_mirror_dagster.replication.progress import Progress, ProgressReporter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ranges(*counts: int) -> list[RangeRef]:
    return [RangeRef(f"r{i}", b"a", b"z", estimated_size=c * 1000, count=c) for i, c in enumerate(counts)]


def test_counts_add_up_and_a_batch_settles_to_its_exact_figures() -> None:
    clock = Clock()
    progress = ProgressReporter("m", clock=clock)
    progress.ref_started("branch main")
    progress.batch_planned(_ranges(10, 30))
    for _ in range(4):
        progress.object_done(1000)
    clock.now += 2
    mid = progress.snapshot()
    assert (mid.ranges_planned, mid.objects_planned) == (2, 40)
    assert (mid.objects_done, mid.bytes_done, mid.refs_in_flight) == (4, 4000, ("branch main",))
    assert mid.eta_seconds == 18.0  # 36 objects left at 2 objects per second
    # The batch returns: 40 objects handled (some unchanged, never seen one by one), 5,000 bytes copied.
    progress.batch_done(ranges=2, objects=40, copied_bytes=5000)
    progress.ref_finished("branch main")
    done = progress.snapshot()
    assert (done.ranges_done, done.objects_done, done.bytes_done) == (2, 40, 5000)
    assert (done.refs_in_flight, done.refs_done, done.eta_seconds) == ((), 1, 0.0)
    assert "ranges 2/2, objects 40/40, 0.0 MB copied, " in done.line() and "1 ref(s) done" in done.line()


def test_listeners_hear_at_their_cadence_and_always_when_a_ref_finishes() -> None:
    clock = Clock()
    progress = ProgressReporter("m", clock=clock)
    heard: list[Progress] = []
    progress.listen(heard.append, every_s=10)
    progress.ref_started("branch a")
    progress.batch_planned(_ranges(100))
    assert len(heard) == 1  # the first report comes at once
    for _ in range(50):
        clock.now += 0.1
        progress.object_done(10)
    assert len(heard) == 1, "no second report within 10 s"
    clock.now += 10
    progress.object_done(10)
    assert len(heard) == 2 and heard[-1].objects_done == 51
    progress.ref_finished("branch a")
    assert len(heard) == 3 and heard[-1].refs_done == 1


def test_a_ref_is_told_at_once_and_a_silent_stage_still_beats() -> None:
    """The first report comes when a ref starts (planning a large commit takes a while); while the mirror
    validates, no object moves, yet listeners keep hearing, and the line says what is going on."""
    progress = ProgressReporter("m")
    heard: list[Progress] = []
    progress.listen(heard.append, every_s=0.1)
    progress.ref_started("branch main")
    assert heard and heard[-1].refs_in_flight == ("branch main",)
    progress.validation_started(3)
    told = len(heard)
    deadline = time.monotonic() + 5
    while len(heard) < told + 2 and time.monotonic() < deadline:  # no event: only the heartbeat can tell
        time.sleep(0.05)
    assert len(heard) >= told + 2, "no heartbeat while validating"
    assert heard[-1].validating == 3 and "validating 3 range(s)" in heard[-1].line()
    progress.validation_done(3)
    progress.ref_finished("branch main")
    settled = len(heard)
    time.sleep(1.2)
    assert len(heard) == settled, "nothing in flight: no beat"


def test_a_listener_that_comes_later_hears_at_its_own_cadence_from_the_start() -> None:
    """The engine's in-flight records listen every 5 s before the CLI's display or a benchmark listens every
    0.1 s: the heartbeat must not sleep out the first listener's pause while a silent stage runs."""
    progress = ProgressReporter("m")
    progress.listen(lambda _p: None, every_s=5.0)
    progress.ref_started("branch main")  # the heartbeat is now in a 5 s pause
    time.sleep(0.2)
    heard: list[Progress] = []
    progress.listen(heard.append, every_s=0.1)
    progress.validation_started(1)
    told = len(heard)
    deadline = time.monotonic() + 1.5
    while len(heard) < told + 2 and time.monotonic() < deadline:  # no event: only the heartbeat can tell
        time.sleep(0.05)
    beats = len(heard) - told
    progress.validation_done(1)
    progress.ref_finished("branch main")
    assert beats >= 2, "the heartbeat slept out the first listener's 5 s"
