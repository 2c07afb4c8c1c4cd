"""The refs an engine is advancing, with their progress, kept in the mirrors database for other processes to show.

The progress of a sync lives in its engine's ``ProgressReporter``; the REST API and ``lakefs-mirror status`` often
run in another process. ``InFlightRecorder`` writes each ref in flight (``RefInFlight``) at the reporter's cadence,
and as a heartbeat while nothing moves, on a thread of its own, so a slow or failing database never slows or fails
the sync (a failed write is logged and the sync goes on). A ref that finishes is removed; so is every record of a
process that exits normally. A record not written for ``STALE_AFTER_S`` was left by a process that died or lost
its database: ``in_flight_view`` shows it as ``stale``, not as in flight.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ..mirrors import MirrorBranch, MirrorNotFound, MirrorsDatabase, RefInFlight
from ..mirrors.in_flight_model import COUNTERS
from .progress import Progress, ProgressReporter

__all__ = [
    "IN_FLIGHT_EVERY_S",
    "STALE_AFTER_S",
    "BranchProgress",
    "InFlightRecorder",
    "InFlightStore",
    "branch_progress",
    "clear_in_flight_records",
    "in_flight_line",
    "in_flight_view",
]

log = logging.getLogger(__name__)

#: Seconds between writes of a ref's record while it is in flight (also when nothing moved: a heartbeat).
IN_FLIGHT_EVERY_S = 5.0
#: A record not written for this long is shown as stale: its process died, hangs, or lost the database.
STALE_AFTER_S = 60.0
#: Events (a ref started or finished) within this time are written in one round.
_GATHER_S = 0.5
#: Longest wait at process exit for the last records to be removed.
_EXIT_FLUSH_S = 5.0


class InFlightStore(Protocol):
    """Where refs in flight are kept (every ``MirrorsDatabase`` is one)."""

    def put_in_flight(self, record: RefInFlight) -> None: ...

    def clear_in_flight(self, mirror_id: str, kind: str, ref: str) -> bool: ...


class InFlightRecorder:
    """Keeps the records of one engine's refs in flight (``reporter``'s) in ``store`` for mirror ``mirror_id``.

    It hooks itself on the reporter: each ref that starts or finishes, and each progress tick, wakes its writer
    thread, which runs only while something is in flight. ``lock`` is the engine's lock around database calls.
    """

    def __init__(
        self,
        store: InFlightStore,
        mirror_id: str,
        reporter: ProgressReporter,
        *,
        lock: threading.Lock,
        every_s: float = IN_FLIGHT_EVERY_S,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store, self._mirror_id, self._reporter = store, mirror_id, reporter
        self._db_lock, self._every_s, self._now = lock, every_s, now
        self._lock = threading.Lock()
        self._wake = threading.Event()
        #: Set when the process leaves: a round waiting for a burst of events to settle writes at once.
        self._leaving = threading.Event()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._warned = False
        #: What the database holds: ref label -> (source commit, started at).
        self._written: dict[str, tuple[str, datetime]] = {}
        reporter.watch_refs(self.wake)
        reporter.listen(lambda _progress: self.wake(), every_s=every_s)
        _LIVE.add(self)

    def wake(self) -> None:
        """Write soon (never blocks): start the writer thread if it is not running."""
        with self._lock:
            self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="in-flight-records", daemon=True)
                self._thread.start()

    def flush(self, timeout_s: float) -> None:
        """Remove every record written (the process is leaving) and wait for that, at most ``timeout_s``."""
        with self._lock:
            self._closing = True
            thread = self._thread
        if thread is None:
            return
        self._leaving.set()
        self._wake.set()
        thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            if self._wake.wait(self._every_s) and not self._closing:
                self._leaving.wait(_GATHER_S)  # let a burst of events settle into one round, unless leaving
            self._wake.clear()
            self._round()
            with self._lock:
                if self._closing or (not self._wake.is_set() and not self._written and not self._reporter.refs()):
                    self._thread = None
                    return

    def _round(self) -> None:
        """Write each ref in flight as it is now; remove the records of refs no longer in flight."""
        now = self._now()
        current: dict[str, tuple[str, datetime]] = {}
        for ref in [] if self._closing else self._reporter.refs():
            if ref.source_commit_id is None:
                continue
            before = self._written.get(ref.ref)
            if before is not None and before[0] == ref.source_commit_id:
                started = before[1]
            else:
                started = now - timedelta(seconds=ref.progress.elapsed_seconds)
            current[ref.ref] = (ref.source_commit_id, started)
            kind, _, name = ref.ref.partition(" ")
            record = RefInFlight(
                mirror_id=self._mirror_id,
                kind=kind,
                ref=name,
                source_commit_id=ref.source_commit_id,
                started_at=started,
                updated_at=now,
                **_counters(ref.progress),
            )
            self._call(f"record {ref.ref} in flight", functools.partial(self._store.put_in_flight, record))
        for label in self._written.keys() - current.keys():
            kind, _, name = label.partition(" ")
            clear = functools.partial(self._store.clear_in_flight, self._mirror_id, kind, name)
            self._call(f"remove the in-flight record of {label}", clear)
        self._written = current

    def _call(self, what: str, write: Callable[[], object]) -> None:
        """One database write; a failure is logged (a warning the first time) and the sync goes on."""
        try:
            with self._db_lock:
                write()
        except MirrorNotFound:
            pass  # the mirror was deleted while it synced: nothing to show any more
        except Exception as exc:
            level = logging.DEBUG if self._warned else logging.WARNING
            self._warned = True
            log.log(level, "could not %s (the sync goes on): %s: %s", what, type(exc).__name__, exc)


def _counters(progress: Progress) -> dict[str, int]:
    return {name: getattr(progress, name) for name in COUNTERS}


_LIVE: weakref.WeakSet[InFlightRecorder] = weakref.WeakSet()


@atexit.register
def clear_in_flight_records(timeout_s: float = _EXIT_FLUSH_S) -> None:
    """Remove every in-flight record this process wrote, waiting at most ``timeout_s`` per engine: a process that
    exits normally, or stops on a signal, leaves no record behind (one killed leaves stale ones)."""
    for recorder in list(_LIVE):
        recorder.flush(timeout_s)


# ---------------------------------------------------------------------------------------------------- reading
def in_flight_view(
    record: RefInFlight, now: datetime | None = None, *, stale_after_s: float = STALE_AFTER_S
) -> dict[str, Any]:
    """A record as the API and ``status`` show it: ``state`` (``in_flight``, or ``stale`` when not written for
    ``stale_after_s``), the target commit, times, the counters as ``Progress`` names them, rate and time left."""
    now = now or datetime.now(UTC)
    age = max(0.0, (now - record.updated_at).total_seconds())
    stale = age > stale_after_s
    progress = Progress(
        mirror=record.mirror_id,
        ranges_planned=record.ranges_planned,
        ranges_done=record.ranges_done,
        objects_planned=record.objects_planned,
        objects_done=record.objects_done,
        bytes_done=record.bytes_done,
        elapsed_seconds=(record.updated_at - record.started_at).total_seconds(),
    )
    eta = progress.eta_seconds
    return {
        "state": "stale" if stale else "in_flight",
        "source_commit_id": record.source_commit_id,
        "started_at": record.started_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "updated_seconds_ago": round(age, 1),
        **record.counters(),
        "elapsed_seconds": round(progress.elapsed_seconds, 1),
        "bytes_per_second": round(progress.bytes_per_second, 1),
        "eta_seconds": None if stale or eta is None else round(max(0.0, eta - age), 1),
    }


def in_flight_line(view: dict[str, Any]) -> str:
    """One line for ``status``'s text output."""
    eta = view["eta_seconds"]
    figures = (
        f"objects {view['objects_done']}/{view['objects_planned']}, ranges {view['ranges_done']}/"
        f"{view['ranges_planned']}, {view['bytes_done'] / 1e6:.1f} MB copied"
    )
    target = str(view["source_commit_id"])[:16]
    if view["state"] == "stale":
        return (
            f"STALE: was syncing to {target} ({figures}), not updated for {view['updated_seconds_ago']:.0f}s: its "
            "process died or lost the database"
        )
    return (
        f"in flight to {target}: {figures}, eta {'-' if eta is None else f'{eta:.0f}s'}, "
        f"{view['elapsed_seconds']:.0f}s elapsed"
    )


@dataclass(frozen=True)
class BranchProgress:
    """A branch of a mirror: what the mirrors database records for it (None for a branch never synced yet) and
    its in-flight view (None when idle)."""

    branch: str
    record: MirrorBranch | None
    in_flight: dict[str, Any] | None


def branch_progress(
    mirrors: MirrorsDatabase, mirror_id: str, *, now: datetime | None = None, stale_after_s: float = STALE_AFTER_S
) -> list[BranchProgress]:
    """Every branch of the mirror that is recorded or in flight, by name, with its in-flight view."""
    now = now or datetime.now(UTC)
    records = {b.branch: b for b in mirrors.get_branches(mirror_id)}
    flying = {
        r.ref: in_flight_view(r, now, stale_after_s=stale_after_s)
        for r in mirrors.refs_in_flight(mirror_id)
        if r.kind == "branch"
    }
    return [BranchProgress(name, records.get(name), flying.get(name)) for name in sorted(records.keys() | flying)]
