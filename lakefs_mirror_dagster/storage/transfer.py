"""Copying objects between blockstores: server-side where possible, else streamed with bounded memory."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import BinaryIO, Literal, TypeVar

from ..backoff import Backoff
from ..config import Concurrency
from .bandwidth import TokenBucket, throttled
from .base import Blockstore, ObjectStat
from .budget import DEFAULT_MAX_BYTES_IN_FLIGHT, ByteBudget
from .checksums import Check, ExpectedContent, RecordedChecksum, VerifyingReader, at_rest_check
from .concurrency import CopiesInFlight
from .errors import ChecksumMismatchError, ObjectNotFound, StorageAccessError, StorageError

__all__ = ["CopyResult", "CopyTask", "TransferFailure", "TransferPool", "TransferSummary", "copy_object"]

log = logging.getLogger(__name__)

CopyMethod = Literal["server_side", "stream", "skipped"]

#: Part sizes a pool remembers from multipart checksums it matched: tried first on the objects after.
_REMEMBERED_PART_SIZES = 4
_T = TypeVar("_T")


@dataclass(frozen=True)
class CopyResult:
    """How one object was copied (or why not), how many bytes it has, and how its content was checked
    against lakeFS's checksum (None for skipped objects)."""

    src_uri: str
    dst_uri: str
    size: int
    method: CopyMethod
    check: Check | None = None
    part_size: int | None = None


def _holds(dst: ObjectStat | None, size: int, etag: str | None) -> bool:
    """Whether a destination object with stat ``dst`` holds the content of size ``size`` and checksum ``etag``."""
    return dst is not None and dst.size == size and at_rest_check(etag, size, dst.etag) is not None


def copy_object(
    src_store: Blockstore,
    src_uri: str,
    dst_store: Blockstore,
    dst_uri: str,
    *,
    size: int | None = None,
    etag: str | None = None,
    allow_server_side: bool = True,
    part_sizes: tuple[int, ...] = (),
    discover: bool = False,
    previous_md5: str | None = None,
    budget: ByteBudget | None = None,
    limiter: TokenBucket | None = None,
    in_flight: CopiesInFlight | None = None,
) -> CopyResult:
    """Copy one object; server-side when the destination can reach the source, else streamed.

    A refused server-side copy (the destination's credentials cannot read the source) falls back to
    streaming through this process; memory stays bounded by the stores' chunk sizes. ``size`` (when the
    caller knows it, e.g. from a lakeFS entry) is checked against what the source delivers. ``etag`` is the
    entry's checksum: streamed bytes that match no checksum lakeFS can have recorded for them are never
    stored (``checksums``), and a destination that reports the MD5 of what it stored must report the MD5 of
    what was sent (ChecksumMismatchError). ``part_sizes``, ``discover`` and ``previous_md5`` say how hard to
    look for a multipart layout (``ExpectedContent``); with ``discover`` the source store is asked for its own.
    A streamed copy reserves the destination's part buffer (``write_buffer_size``) from ``budget`` before it
    opens the source and gives it back once the object is stored. A streamed copy reads its source through
    ``limiter`` (``transfer.max_bytes_per_second``), when there is one, and tells ``in_flight`` how long the source
    took to answer (the round trip ``auto`` concurrency follows).
    """
    if allow_server_side and dst_store.same_endpoint_as(src_store):
        try:
            stat = dst_store.server_side_copy(src_uri, dst_uri)
            if size is not None and stat.size != size:
                raise StorageError(f"copy {src_uri}: source has {stat.size} bytes, expected {size}", uri=src_uri)
            check = at_rest_check(etag, stat.size, stat.etag)
            if check is None:
                dst_store.delete(dst_uri)
                raise ChecksumMismatchError(
                    f"copy {dst_uri}: the destination stored bytes with MD5 {stat.etag}, lakeFS recorded {etag}; "
                    "deleted",
                    uri=dst_uri,
                )
            return CopyResult(src_uri, dst_uri, stat.size, "server_side", check)
        except StorageAccessError as exc:
            log.info("server-side copy of %s refused (%s); streaming instead", src_uri, exc)
    if size is None:
        src_stat = src_store.stat(src_uri)
        if src_stat is None:
            raise ObjectNotFound(f"copy {src_uri}: no such object in {src_store.describe()}", uri=src_uri)
        size = src_stat.size
    if discover and (own := src_store.part_size(src_uri)) is not None:
        part_sizes = (own, *part_sizes)
    expected = ExpectedContent(etag, size, part_sizes, discover, previous_md5)
    held = budget.hold(dst_store.write_buffer_size(size)) if budget is not None else nullcontext()

    def open_source() -> BinaryIO:
        read = functools.partial(src_store.open_read, src_uri, size=size)
        return read() if in_flight is None else in_flight.timed(read)

    if _store_checks(dst_store, expected):
        with held, throttled(open_source(), limiter) as stream:
            stat = dst_store.write_stream(dst_uri, stream, size)
        found = RecordedChecksum.parse(stat.etag)
        if found.may_be_content_md5 and found.hex == expected.recorded.hex:
            return CopyResult(src_uri, dst_uri, stat.size, "stream", Check.MD5)
        dst_store.delete(dst_uri)
        # the store's MD5 of the bytes (the pool reads them again at once, hashing them for a multipart layout)
        raise ChecksumMismatchError(
            f"copy {src_uri}: lakeFS recorded {expected.recorded.hex}, the destination stored bytes with MD5 "
            f"{stat.etag}; deleted",
            uri=src_uri,
            content_md5=found.hex if found.may_be_content_md5 else _NOT_AN_MD5,
        )
    with held, throttled(open_source(), limiter) as stream:
        reader = VerifyingReader(stream, expected, uri=src_uri)
        stat = dst_store.write_stream(dst_uri, reader, size)
    try:
        reader.complete()  # a store may write an empty object without reading
    except ChecksumMismatchError:
        dst_store.delete(dst_uri)
        raise
    _check_stored(dst_store, dst_uri, stat, reader.md5)
    return CopyResult(src_uri, dst_uri, stat.size, "stream", reader.check, reader.part_size)


#: ``content_md5`` of a mismatch whose destination answered no MD5: the retry then hashes the bytes here.
_NOT_AN_MD5 = "-"


def _store_checks(dst_store: Blockstore, expected: ExpectedContent) -> bool:
    """Whether the destination's own MD5 of what it stores may check the copy instead of an MD5 computed here
    (``Blockstore.answers_md5``): the checksum lakeFS recorded is a plain MD5-like one (no ``-<parts>``), and
    neither an earlier read of this object nor an earlier object of this pool suggests a multipart layout, which
    only hashing here can check. A mismatch is deleted and read again with hashing (``TransferPool``)."""
    return (
        expected.recorded.may_be_content_md5
        and not expected.discover
        and expected.previous_md5 is None
        and not expected.part_sizes
        and dst_store.answers_md5(expected.size)
    )


def _check_stored(dst_store: Blockstore, dst_uri: str, stat: ObjectStat, sent_md5: str | None) -> None:
    """The destination's own MD5 of what it stored (S3 single-part writes report one) must be the MD5 of
    the bytes sent: whatever lakeFS recorded, this catches damage between this process and the store."""
    found = RecordedChecksum.parse(stat.etag)
    if sent_md5 is not None and found.may_be_content_md5 and found.hex != sent_md5:
        dst_store.delete(dst_uri)
        raise ChecksumMismatchError(
            f"write {dst_uri}: the destination stored bytes with MD5 {found.hex}, the bytes sent have MD5 "
            f"{sent_md5}; deleted",
            uri=dst_uri,
        )


@dataclass(frozen=True)
class CopyTask:
    """One object to copy; ``size`` is the expected size when known (saves a HEAD on the source), ``etag``
    the lakeFS entry's checksum (the content is checked against it as exactly as it allows)."""

    src_store: Blockstore
    src_uri: str
    dst_store: Blockstore
    dst_uri: str
    size: int | None = None
    etag: str | None = None


@dataclass(frozen=True)
class TransferFailure:
    """A task that failed for good: the reason is the storage error message (no secrets)."""

    src_uri: str
    dst_uri: str
    reason: str
    error_type: str
    attempts: int

    def describe(self) -> str:
        """The object's place at the destination (its lakeFS address in the namespace) and why it failed."""
        return f"{self.dst_uri}: {self.reason} ({self.attempts} attempt{'s' if self.attempts != 1 else ''})"


@dataclass
class TransferSummary:
    """Counts of a ``TransferPool.run``; ``bytes_copied`` excludes skipped objects."""

    copied: int = 0
    skipped: int = 0
    bytes_copied: int = 0
    bytes_skipped: int = 0
    server_side: int = 0
    retries: int = 0
    failed: list[TransferFailure] = field(default_factory=list)
    #: How many copied objects passed each ``Check`` (``md5``, ``multipart_md5``, ``size``).
    checks: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def raise_on_failure(self) -> None:
        """Raise a StorageError summarising the failures, if there were any."""
        if self.failed:
            first = "; ".join(f"{f.src_uri}: {f.reason}" for f in self.failed[:5])
            more = f" (and {len(self.failed) - 5} more)" if len(self.failed) > 5 else ""
            raise StorageError(f"{len(self.failed)} object copies failed: {first}{more}")


class _Failed(Exception):
    """Carries the final error of a task and how many attempts were made."""

    def __init__(self, cause: BaseException, attempts: int) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.attempts = attempts


class _OnThisThread(Executor):
    """Runs each task as it is submitted, on the submitting thread, into a finished future: a run of one copy (a
    history's commit adds one object, copied ahead on a read-ahead thread) starts no thread for it."""

    def submit(self, fn: Callable[..., _T], /, *args: object, **kwargs: object) -> Future[_T]:
        future: Future[_T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


class TransferPool:
    """Copies many objects on a bounded thread pool, skipping those already at the destination.

    At most ``concurrency`` copies run at once (``auto``: as many as the source reads' round trip calls for,
    ``concurrency.py``) and at most twice that many tasks of a run are pending, so a huge task iterable is
    consumed lazily. The part buffers of streamed copies together stay within
    ``max_bytes_in_flight`` (``ByteBudget``), whatever the object sizes. Transient errors are retried on the
    package's ``Backoff`` (first retry within ``backoff_initial`` seconds, doubling up to ``backoff_max``), at most
    ``max_attempts`` tries per object; other errors fail the object immediately.
    """

    def __init__(
        self,
        *,
        concurrency: Concurrency = 8,
        max_bytes_in_flight: int = DEFAULT_MAX_BYTES_IN_FLIGHT,
        max_attempts: int = 5,
        backoff_initial: float = 0.5,
        backoff_max: float = 10.0,
        skip_existing: bool = True,
        allow_server_side: bool = True,
        on_result: Callable[[CopyResult], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        limiter: TokenBucket | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        #: The copies at once across every ``run`` of this pool, also when several branches transfer at the same
        #: time: the bound on threads, connections and buffered parts; ``clock`` times the source reads.
        self.in_flight = CopiesInFlight(concurrency, clock=clock)
        if max_attempts < 1:
            raise ValueError(f"TransferPool max_attempts must be at least 1, got {max_attempts}")
        if backoff_initial < 0 or backoff_max < 0:
            raise ValueError("TransferPool backoff times must not be negative")
        self.max_attempts = max_attempts
        self._backoff = Backoff(base=backoff_initial, cap=backoff_max, attempts=max_attempts, sleep=sleep)
        self.skip_existing = skip_existing
        self.allow_server_side = allow_server_side
        self._on_result = on_result
        #: The process's egress bucket (``bandwidth.process_limiter``) every streamed copy reads through.
        self.limiter = limiter
        self._lock = threading.Lock()
        #: Bytes buffered by streamed copies, across every ``run`` of this pool (raises on a size below 1).
        self.budget = ByteBudget(max_bytes_in_flight)
        #: Destinations being copied now, by any run: a second copy to one of them waits for the first and then
        #: finds it present (two branches syncing at once often need the same new object).
        self._in_flight: dict[str, threading.Event] = {}
        #: Part sizes of multipart checksums matched so far, newest first: one writer's objects share one.
        self._part_sizes: tuple[int, ...] = ()

    def _copy_one(self, task: CopyTask, known: Mapping[str, ObjectStat | None]) -> tuple[CopyResult, int]:
        """``_copy_once``, unless another run is copying to the same destination: then after it, with the
        destination looked at afresh (present: skipped; failed there: copied here)."""
        with self._lock:
            first = self._in_flight.get(task.dst_uri)
            if first is None:
                self._in_flight[task.dst_uri] = threading.Event()
        if first is not None:
            first.wait()
            return self._copy_once(task, {})
        try:
            return self._copy_once(task, known)
        finally:
            with self._lock:
                self._in_flight.pop(task.dst_uri).set()

    def _copy_once(self, task: CopyTask, known: Mapping[str, ObjectStat | None]) -> tuple[CopyResult, int]:
        """Returns the result and the number of retries it took; raises the last error. A checksum that the
        first read could not explain is read again looking for its multipart layout (``discover``)."""
        tries, previous_md5 = self._backoff.start(), None
        while True:
            try:
                with self.in_flight.slot():
                    result = self._attempt(task, known, discover=previous_md5 is not None, previous_md5=previous_md5)
            except Exception as exc:
                if not isinstance(exc, StorageError) or not exc.transient:
                    raise _Failed(exc, tries.attempts) from exc
                if isinstance(exc, ChecksumMismatchError) and exc.content_md5 is not None:
                    previous_md5 = exc.content_md5
                    if tries.attempts == 1:  # most likely a multipart layout not tried yet: no need to wait
                        log.info("copy %s: %s; reading again to find its part size", task.src_uri, exc)
                        if tries.at_once():
                            continue
                        raise _Failed(exc, tries.attempts) from exc

                def note(delay: float, exc: Exception = exc) -> None:
                    log.warning("copy %s failed (%s); retry %d in %.1fs", task.src_uri, exc, tries.attempts, delay)

                if not tries.wait(note=note):
                    raise _Failed(exc, tries.attempts) from exc
                continue
            if result.part_size is not None:
                with self._lock:
                    self._part_sizes = tuple(dict.fromkeys((result.part_size, *self._part_sizes)))[
                        :_REMEMBERED_PART_SIZES
                    ]
            return result, tries.attempts - 1

    def _attempt(
        self, task: CopyTask, known: Mapping[str, ObjectStat | None], *, discover: bool, previous_md5: str | None
    ) -> CopyResult:
        size = task.size
        if self.skip_existing:
            if size is None:
                src = task.src_store.stat(task.src_uri)
                if src is None:
                    raise ObjectNotFound(
                        f"copy {task.src_uri}: no such object in {task.src_store.describe()}",
                        uri=task.src_uri,
                    )
                size = src.size
            dst = known[task.dst_uri] if task.dst_uri in known else task.dst_store.stat(task.dst_uri)
            if _holds(dst, size, task.etag):
                return CopyResult(task.src_uri, task.dst_uri, size, "skipped")
        return copy_object(
            task.src_store,
            task.src_uri,
            task.dst_store,
            task.dst_uri,
            size=size,
            etag=task.etag,
            allow_server_side=self.allow_server_side,
            part_sizes=self._part_sizes,
            discover=discover,
            previous_md5=previous_md5,
            budget=self.budget,
            limiter=self.limiter,
            in_flight=self.in_flight,
        )

    def run(
        self,
        tasks: Iterable[CopyTask],
        known_destinations: Mapping[str, ObjectStat | None] | None = None,
        *,
        on_result: Callable[[CopyResult], None] | None = None,
    ) -> TransferSummary:
        """Copy every task; failures are collected in the summary, never raised. ``known_destinations``
        (from ``listed_stats``) settles whether a destination already holds an object without a HEAD: a
        URI in it maps to the object's stat, or to None when it is absent. Copies are atomic, so what it
        says stays true across retries. ``on_result`` hears each object of this run that arrived (after the
        pool's own)."""
        known: Mapping[str, ObjectStat | None] = known_destinations or {}
        summary = TransferSummary()
        lock = threading.Lock()
        pending = threading.Condition()  # tasks of this run submitted and not finished: at most twice the limit
        submitted = 0

        def finished(task: CopyTask, future: Future[tuple[CopyResult, int]]) -> None:
            try:
                exc = future.exception()
                with lock:
                    if exc is not None:
                        cause, attempts = (exc.cause, exc.attempts) if isinstance(exc, _Failed) else (exc, 1)
                        summary.failed.append(
                            TransferFailure(
                                src_uri=task.src_uri,
                                dst_uri=task.dst_uri,
                                reason=str(cause),
                                error_type=type(cause).__name__,
                                attempts=attempts,
                            )
                        )
                        return
                    result, retries = future.result()
                    summary.retries += retries
                    if result.method == "skipped":
                        summary.skipped += 1
                        summary.bytes_skipped += result.size
                    else:
                        summary.copied += 1
                        summary.bytes_copied += result.size
                        summary.server_side += result.method == "server_side"
                        check = str(result.check or Check.SIZE)
                        summary.checks[check] = summary.checks.get(check, 0) + 1
                for hear in (self._on_result, on_result):
                    if hear is not None:
                        hear(result)
            finally:
                done()

        def done() -> None:
            nonlocal submitted
            with pending:
                submitted -= 1
                pending.notify()

        def room() -> bool:
            return submitted < 2 * self.in_flight.limit

        # Threads up to the cap: an ``auto`` limit may grow while this run goes on (the executor starts them as
        # tasks wait, so there are at most as many as tasks pending), and then wakes this loop to submit more.
        one = isinstance(tasks, Sequence) and len(tasks) == 1
        with (
            self.in_flight.watching(pending),
            _OnThisThread()
            if one
            else ThreadPoolExecutor(max_workers=self.in_flight.cap, thread_name_prefix="blockstore-copy") as pool,
        ):
            for task in tasks:
                with pending:
                    pending.wait_for(room)
                    submitted += 1
                if (
                    self.skip_existing
                    and task.size is not None
                    and _holds(known.get(task.dst_uri), task.size, task.etag)
                ):
                    settled: Future[tuple[CopyResult, int]] = Future()  # known present: no thread, no request
                    settled.set_result((CopyResult(task.src_uri, task.dst_uri, task.size, "skipped"), 0))
                    finished(task, settled)
                    continue
                try:
                    future = pool.submit(self._copy_one, task, known)
                except BaseException:
                    done()
                    raise
                future.add_done_callback(lambda f, t=task: finished(t, f))  # type: ignore[misc]
        return summary
