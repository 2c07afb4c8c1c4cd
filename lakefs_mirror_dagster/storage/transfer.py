"""Copying objects between blockstores: server-side where possible, else streamed with bounded memory."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from .base import Blockstore, ObjectStat, ReadableStream
from .checksums import VerifyingReader, content_md5, md5_conflict
from .errors import ChecksumMismatchError, ObjectNotFound, StorageAccessError, StorageError

__all__ = ["CopyResult", "CopyTask", "TransferFailure", "TransferPool", "TransferSummary", "copy_object"]

log = logging.getLogger(__name__)

CopyMethod = Literal["server_side", "stream", "skipped"]


@dataclass(frozen=True)
class CopyResult:
    """How one object was copied (or why not) and how many bytes it has."""

    src_uri: str
    dst_uri: str
    size: int
    method: CopyMethod


def copy_object(
    src_store: Blockstore,
    src_uri: str,
    dst_store: Blockstore,
    dst_uri: str,
    *,
    size: int | None = None,
    etag: str | None = None,
    allow_server_side: bool = True,
) -> CopyResult:
    """Copy one object; server-side when the destination can reach the source, else streamed.

    A refused server-side copy (the destination's credentials cannot read the source) falls back to
    streaming through this process; memory stays bounded by the stores' chunk sizes. ``size`` (when the
    caller knows it, e.g. from a lakeFS entry) is checked against what the source delivers. ``etag`` is the
    entry's ETag: when it is an MD5, streamed bytes that hash otherwise are never stored, and a destination
    that reports a different MD5 for what it stored has the object deleted again (ChecksumMismatchError).
    """
    if allow_server_side and dst_store.same_endpoint_as(src_store):
        try:
            stat = dst_store.server_side_copy(src_uri, dst_uri)
            if size is not None and stat.size != size:
                raise StorageError(f"copy {src_uri}: source has {stat.size} bytes, expected {size}", uri=src_uri)
            _check_stored(dst_store, dst_uri, stat, etag)
            return CopyResult(src_uri, dst_uri, stat.size, "server_side")
        except StorageAccessError as exc:
            log.info("server-side copy of %s refused (%s); streaming instead", src_uri, exc)
    if size is None:
        src_stat = src_store.stat(src_uri)
        if src_stat is None:
            raise ObjectNotFound(f"copy {src_uri}: no such object in {src_store.describe()}", uri=src_uri)
        size = src_stat.size
    md5 = content_md5(etag)
    with src_store.open_read(src_uri) as stream:
        source: ReadableStream = stream if md5 is None else VerifyingReader(stream, size=size, md5=md5, uri=src_uri)
        stat = dst_store.write_stream(dst_uri, source, size)
    _check_stored(dst_store, dst_uri, stat, etag)
    return CopyResult(src_uri, dst_uri, stat.size, "stream")


def _check_stored(dst_store: Blockstore, dst_uri: str, stat: ObjectStat, etag: str | None) -> None:
    """The destination's own MD5 of what it stored (S3 single-part writes report one) must be the entry's."""
    if md5_conflict(etag, stat.etag):
        dst_store.delete(dst_uri)
        raise ChecksumMismatchError(
            f"write {dst_uri}: the destination stored bytes with MD5 {stat.etag}, lakeFS recorded {etag}; deleted",
            uri=dst_uri,
        )


@dataclass(frozen=True)
class CopyTask:
    """One object to copy; ``size`` is the expected size when known (saves a HEAD on the source), ``etag``
    the lakeFS entry's ETag (checked when it is an MD5)."""

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


class TransferPool:
    """Copies many objects on a bounded thread pool, skipping those already at the destination.

    At most ``concurrency`` copies run at once and at most ``2 * concurrency`` tasks are pending, so a
    huge task iterable is consumed lazily. Transient errors are retried with capped exponential backoff
    and jitter, at most ``max_attempts`` times per object; other errors fail the object immediately.
    """

    def __init__(
        self,
        *,
        concurrency: int = 8,
        max_attempts: int = 5,
        backoff_initial: float = 0.5,
        backoff_max: float = 10.0,
        skip_existing: bool = True,
        allow_server_side: bool = True,
        on_result: Callable[[CopyResult], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"TransferPool concurrency must be at least 1, got {concurrency}")
        if max_attempts < 1:
            raise ValueError(f"TransferPool max_attempts must be at least 1, got {max_attempts}")
        if backoff_initial < 0 or backoff_max < 0:
            raise ValueError("TransferPool backoff times must not be negative")
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.skip_existing = skip_existing
        self.allow_server_side = allow_server_side
        self._on_result = on_result
        self._sleep = sleep

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_max, self.backoff_initial * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)

    def _copy_one(self, task: CopyTask, known: Mapping[str, ObjectStat | None]) -> tuple[CopyResult, int]:
        """Returns the result and the number of retries it took; raises the last error."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(task, known), attempt - 1
            except Exception as exc:
                if not isinstance(exc, StorageError) or not exc.transient or attempt >= self.max_attempts:
                    raise _Failed(exc, attempt) from exc
                delay = self._backoff(attempt)
                log.warning("copy %s failed (%s); retry %d in %.1fs", task.src_uri, exc, attempt, delay)
                self._sleep(delay)

    def _attempt(self, task: CopyTask, known: Mapping[str, ObjectStat | None]) -> CopyResult:
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
            if dst is not None and dst.size == size and not md5_conflict(task.etag, dst.etag):
                return CopyResult(task.src_uri, task.dst_uri, size, "skipped")
        return copy_object(
            task.src_store,
            task.src_uri,
            task.dst_store,
            task.dst_uri,
            size=size,
            etag=task.etag,
            allow_server_side=self.allow_server_side,
        )

    def run(
        self, tasks: Iterable[CopyTask], known_destinations: Mapping[str, ObjectStat | None] | None = None
    ) -> TransferSummary:
        """Copy every task; failures are collected in the summary, never raised. ``known_destinations``
        (from ``listed_stats``) settles whether a destination already holds an object without a HEAD: a
        URI in it maps to the object's stat, or to None when it is absent. Copies are atomic, so what it
        says stays true across retries."""
        known: Mapping[str, ObjectStat | None] = known_destinations or {}
        summary = TransferSummary()
        lock = threading.Lock()
        slots = threading.BoundedSemaphore(2 * self.concurrency)

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
                if self._on_result is not None:
                    self._on_result(result)
            finally:
                slots.release()

        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="blockstore-copy") as pool:
            for task in tasks:
                slots.acquire()
                try:
                    future = pool.submit(self._copy_one, task, known)
                except BaseException:
                    slots.release()
                    raise
                future.add_done_callback(lambda f, t=task: finished(t, f))  # type: ignore[misc]
        return summary
