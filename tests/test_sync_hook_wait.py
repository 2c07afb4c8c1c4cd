"""``sync``'s wait between passes with ``hooks.enabled``: it reads the wake-up queue every ``hooks.poll_interval``
and wakes at the first read that names a ref; without hooks it just sleeps. A small fake service counts reads
(the queue itself is tested on the real databases, the whole loop against real lakeFS in tests/service), and a
virtual clock stands in for ``time`` in the modules under test: each sleep moves it at once and is recorded, so
the schedule of reads is seen exactly, whatever the machine's load."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest

from lakefs_mirror_dagster.config import HooksConfig
from lakefs_mirror_dagster.mirrors import Mirror, MirrorState, RefWakeup
from lakefs_mirror_dagster.region import hooks as hooks_module
from lakefs_mirror_dagster.region import sync_loop, wait_for_pass

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class _Clock:
    """``time.monotonic`` and ``time.sleep`` on a virtual clock (binary-exact steps keep the sums exact)."""

    def __init__(self) -> None:
        self.now = 1024.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    virtual = _Clock()
    monkeypatch.setattr(hooks_module, "time", virtual)
    monkeypatch.setattr(sync_loop, "time", virtual)
    return virtual


class _Queue:
    def __init__(self, clock: _Clock, wake_after_reads: int | None) -> None:
        self.clock, self.wake_after, self.acked = clock, wake_after_reads, 0
        self.read_at: list[float] = []

    @property
    def reads(self) -> int:
        return len(self.read_at)

    def wakeups(self, region: str) -> list[RefWakeup]:
        self.read_at.append(self.clock.now)
        if self.wake_after is None or self.reads < self.wake_after:
            return []
        return [RefWakeup("m1", region, "branch", "main", "post-commit", NOW, "t")]

    def ack_wakeups(self, handled: Any) -> int:
        self.acked += len(list(handled))
        return self.acked


def _service(hooks: HooksConfig, queue: _Queue) -> Any:
    mirror = Mirror(
        id="m1",
        organization_id="org",
        source_region="a",
        source_repository="repo",
        name="mirror",
        destination_region="b",
        storage_namespace="s3://b/m",
        storage_id="",
        state=MirrorState.ACTIVE,
        message="",
        created_at=NOW,
        updated_at=NOW,
        generation=1,
    )
    config = SimpleNamespace(region="b", hooks=hooks)
    return SimpleNamespace(config=config, mirrors=queue, my_mirrors=lambda name=None: iter([mirror]))


def _wait(clock: _Clock, hooks: HooksConfig, queue: _Queue, seconds: float) -> list[Any]:
    return wait_for_pass(_service(hooks, queue), clock.now + seconds)


def _hooks(poll_ms: float | None) -> HooksConfig:
    if poll_ms is None:
        return HooksConfig(enabled=False)
    return HooksConfig(enabled=True, poll_interval=dt.timedelta(milliseconds=poll_ms))


def test_the_queue_is_read_every_poll_interval_until_the_next_pass(clock: _Clock) -> None:
    for poll_ms, reads in ((62.5, 9), (250, 3)):
        queue, started = _Queue(clock, None), clock.now
        assert _wait(clock, _hooks(poll_ms), queue, 0.5) == []
        # a read at once, then one every poll interval, the last one when the next pass is due
        assert queue.read_at == [started + n * poll_ms / 1000 for n in range(reads)]
        assert clock.now == started + 0.5
    off, started = _Queue(clock, None), clock.now
    assert _wait(clock, _hooks(None), off, 0.25) == [] and off.reads == 0
    assert clock.sleeps[-1] == 0.25 and clock.now == started + 0.25  # without hooks: one sleep to the next pass


def test_a_queued_ref_wakes_the_loop_before_the_next_pass(clock: _Clock) -> None:
    queue, started = _Queue(clock, wake_after_reads=3), clock.now
    woken = _wait(clock, _hooks(62.5), queue, 30)
    assert [(w.mirror.name, w.branches) for w in woken] == [("mirror", ["main"])]
    # it returned at the read that found the ref, two polls in, not when the next pass was due 30 s later
    assert queue.reads == 3 and clock.now == started + 0.125
