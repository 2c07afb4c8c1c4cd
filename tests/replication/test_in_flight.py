"""Refs in flight: the reporter counts each ref on its own, the recorder keeps their records in the mirrors
database (a real SQLite store) while they sync and removes them when they finish, a failing or slow database
neither fails nor slows the sync, and a record not written for a while reads as stale."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakefs_mirror_dagster.graveler.records import RangeRef
from lakefs_mirror_dagster.mirrors import MirrorStore, RefInFlight
from lakefs_mirror_dagster.replication import in_flight, in_flight_line
from lakefs_mirror_dagster.replication.in_flight import InFlightRecorder, in_flight_view
from lakefs_mirror_dagster.replication.progress import ProgressReporter
from tests.mirrors.conftest import mirror_id_in

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _ranges(*counts: int) -> list[RangeRef]:
    return [RangeRef(f"r{i}", b"a", b"z", estimated_size=c * 1000, count=c) for i, c in enumerate(counts)]


def _until(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Wait for ``check`` to hold (a liveness bound, not a budget: a busy machine may take a while)."""
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / 0.05) + 1):
        if check():
            return
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)
    assert check(), "not within the time allowed"


def test_each_ref_counts_its_own_objects_and_the_pass_counts_them_all() -> None:
    progress = ProgressReporter("m")
    progress.ref_started("branch a", source_commit="ca")
    progress.ref_started("tag v1", source_commit="cv")
    progress.batch_planned(_ranges(10), ref="branch a")
    progress.batch_planned(_ranges(4, 4), ref="tag v1")
    for _ in range(3):
        progress.object_done(100, ref="branch a")
    progress.object_done(7, ref="tag v1")
    a, v1 = progress.refs()
    assert (a.ref, a.source_commit_id, a.progress.refs_in_flight) == ("branch a", "ca", ("branch a",))
    assert (a.progress.objects_done, a.progress.objects_planned, a.progress.bytes_done) == (3, 10, 300)
    assert (v1.progress.ranges_planned, v1.progress.objects_planned, v1.progress.objects_done) == (2, 8, 1)
    total = progress.snapshot()
    assert (total.objects_planned, total.objects_done, total.bytes_done) == (18, 4, 307)
    progress.batch_done(ranges=1, objects=10, copied_bytes=1000, ref="branch a")
    [a] = [r for r in progress.refs() if r.ref == "branch a"]
    assert (a.progress.ranges_done, a.progress.objects_done, a.progress.bytes_done) == (1, 10, 1000)
    progress.ref_finished("branch a")
    assert [r.ref for r in progress.refs()] == ["tag v1"]


def test_the_recorder_keeps_a_ref_in_flight_in_the_database_and_removes_it_when_done(tmp_path: Path) -> None:
    with MirrorStore(f"sqlite:///{tmp_path / 'mirrors.db'}") as store:
        mirror_id = mirror_id_in(store)
        progress = ProgressReporter("mirror")
        InFlightRecorder(store, mirror_id, progress, lock=threading.Lock(), every_s=0.2)
        progress.ref_started("branch main", source_commit="c" * 64)
        progress.batch_planned(_ranges(6), ref="branch main")
        _until(lambda: [r.objects_planned for r in store.refs_in_flight(mirror_id)] == [6])
        [first] = store.refs_in_flight(mirror_id)
        assert (first.kind, first.ref, first.source_commit_id, first.objects_done) == ("branch", "main", "c" * 64, 0)
        progress.object_done(1000, ref="branch main")
        progress.object_done(1000, ref="branch main")
        # Written again at the cadence (a heartbeat too): same start, newer updated_at, the objects done.
        _until(lambda: [r.objects_done for r in store.refs_in_flight(mirror_id)] == [2])
        [later] = store.refs_in_flight(mirror_id)
        assert later.started_at == first.started_at and later.updated_at > first.updated_at
        assert later.bytes_done == 2000
        progress.ref_finished("branch main")
        _until(lambda: store.refs_in_flight(mirror_id) == [])


class _NotedWait(threading.Event):
    """An event that tells when someone starts waiting on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_a_process_leaving_just_after_a_ref_finished_removes_its_record_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sync --once`` exits right after its last ref: the exit flush does not wait for a burst to settle. Here
    the writer would gather events for an hour and the flush allows 30 s: the record is gone when flush returns
    only if leaving cut the gathering short."""
    with MirrorStore(f"sqlite:///{tmp_path / 'mirrors.db'}") as store:
        mirror_id = mirror_id_in(store)
        progress = ProgressReporter("mirror")
        # no heartbeat within the test: the writer wakes only for the ref's start and finish
        recorder = InFlightRecorder(store, mirror_id, progress, lock=threading.Lock(), every_s=3600)
        gathering = recorder._leaving = _NotedWait()  # set before the writer thread exists
        progress.ref_started("branch main", source_commit="c" * 64)
        _until(lambda: len(store.refs_in_flight(mirror_id)) == 1)
        monkeypatch.setattr(in_flight, "_GATHER_S", 3600.0)
        gathering.waiting.clear()
        progress.ref_finished("branch main")  # wakes the writer, which waits for more events to gather
        assert gathering.waiting.wait(30), "the writer never started gathering"
        assert len(store.refs_in_flight(mirror_id)) == 1  # still gathering
        recorder.flush(timeout_s=30.0)
        assert store.refs_in_flight(mirror_id) == []


class _NotedWait(threading.Event):
    """An event that tells when someone starts waiting on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


class _BrokenStore:
    """A database whose writes hang until the test lets them fail (``release``); ``entered`` is set when the first
    write starts, ``returned`` when one ends. A write made on the sync's own thread fails at once instead of
    hanging: it is the fault the test looks for, shown by ``returned`` without hanging the test."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered, self.release, self.returned = threading.Event(), threading.Event(), threading.Event()
        self.sync_thread = threading.get_ident()

    def put_in_flight(self, record: RefInFlight) -> None:
        self.calls += 1
        self.entered.set()
        try:
            if threading.get_ident() != self.sync_thread:
                self.release.wait(60)
            raise ConnectionError("database down")
        finally:
            self.returned.set()

    def clear_in_flight(self, mirror_id: str, kind: str, ref: str) -> bool:
        self.calls += 1
        raise ConnectionError("database down")


def test_a_failing_slow_database_neither_fails_nor_slows_the_sync(caplog: pytest.LogCaptureFixture) -> None:
    store = _BrokenStore()
    progress = ProgressReporter("mirror")
    InFlightRecorder(store, "mid", progress, lock=threading.Lock(), every_s=0.1)
    with caplog.at_level(logging.WARNING, logger="lakefs_mirror_dagster.replication.in_flight"):
        progress.ref_started("branch main", source_commit="c1")
        assert store.entered.wait(30)  # the first write is under way, and hangs until released
        try:
            for _ in range(200):
                progress.batch_planned(_ranges(1), ref="branch main")
                progress.object_done(10, ref="branch main")
            progress.ref_finished("branch main")
            # the sync's calls all returned while the database write still hung: none of them waited for it
            assert not store.returned.is_set() and store.calls == 1, "the sync waited for the database"
        finally:
            store.release.set()
        _until(lambda: store.calls >= 2)  # and the recorder goes on: it tries to remove the record
    assert [r.message for r in caplog.records if "could not" in r.message][:1] == [
        "could not record branch main in flight (the sync goes on): ConnectionError: database down"
    ]


def test_a_record_not_written_for_a_while_reads_as_stale() -> None:
    record = RefInFlight(
        mirror_id="m",
        kind="branch",
        ref="main",
        source_commit_id="c" * 64,
        started_at=T0,
        updated_at=T0 + timedelta(seconds=10),
        ranges_planned=2,
        objects_planned=100,
        objects_done=25,
        bytes_done=2 * 10**5,
    )
    fresh = in_flight_view(record, T0 + timedelta(seconds=12), stale_after_s=60)
    assert (fresh["state"], fresh["elapsed_seconds"], fresh["updated_seconds_ago"]) == ("in_flight", 10.0, 2.0)
    assert fresh["eta_seconds"] == 28.0  # 75 objects left at 2.5 a second, as of 2 s ago
    assert fresh["bytes_per_second"] == 20_000.0 and fresh["objects_done"] == 25
    assert in_flight_line(fresh).startswith("in flight to cccccccccccccccc: objects 25/100, ranges 0/2")
    stale = in_flight_view(record, T0 + timedelta(seconds=71), stale_after_s=60)
    assert (stale["state"], stale["eta_seconds"]) == ("stale", None)
    assert in_flight_line(stale).startswith("STALE: was syncing to cccccccccccccccc")
