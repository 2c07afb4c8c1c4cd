"""``sync``'s wait between passes with ``hooks.enabled``: it reads the wake-up queue every ``hooks.poll_interval``
and wakes at the first read that names a ref; without hooks it just sleeps. A small fake service counts reads
(the queue itself is tested on the real databases, the whole loop against real lakeFS in tests/service)."""

from __future__ import annotations

import argparse
import datetime as dt
import time
from types import SimpleNamespace
from typing import Any

from lakefs_mirror_dagster.cli import _wait_for_pass
from lakefs_mirror_dagster.config import HooksConfig
from lakefs_mirror_dagster.mirrors import Mirror, MirrorState, RefWakeup

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class _Queue:
    def __init__(self, wake_after_reads: int | None) -> None:
        self.reads, self.wake_after, self.acked = 0, wake_after_reads, 0

    def wakeups(self, region: str) -> list[RefWakeup]:
        self.reads += 1
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


def _wait(hooks: HooksConfig, queue: _Queue, seconds: float) -> tuple[list[Any], float]:
    started = time.monotonic()
    woken = _wait_for_pass(_service(hooks, queue), argparse.Namespace(mirror=None), started + seconds)
    return woken, time.monotonic() - started


def test_the_queue_is_read_every_poll_interval_until_the_next_pass() -> None:
    fast, slow = _Queue(None), _Queue(None)
    _wait(HooksConfig(enabled=True, poll_interval=dt.timedelta(milliseconds=50)), fast, 0.5)
    _wait(HooksConfig(enabled=True, poll_interval=dt.timedelta(milliseconds=250)), slow, 0.5)
    assert 6 <= fast.reads <= 12 and 2 <= slow.reads <= 4, (fast.reads, slow.reads)
    off = _Queue(None)
    assert _wait(HooksConfig(enabled=False), off, 0.2)[0] == [] and off.reads == 0


def test_a_queued_ref_wakes_the_loop_before_the_next_pass() -> None:
    queue = _Queue(wake_after_reads=3)
    woken, took = _wait(HooksConfig(enabled=True, poll_interval=dt.timedelta(milliseconds=50)), queue, 30)
    assert [(w.mirror.name, w.branches) for w in woken] == [("mirror", ["main"])] and took < 5
