"""Egress control: one token bucket per process bounds the object bytes its copies stream (``--bwlimit``).

Every copy a process streams, whichever branch worker or pool thread runs it, reads its source through
``throttled``: each chunk first takes its size from the process's ``TokenBucket`` for that rate
(``process_limiter``), so together they stay within ``max_bytes_per_second`` however many copies run.
Server-side copies never pass through the process and are not counted.

The bucket schedules rather than polls: a take reserves its bytes' time slot under a lock and then sleeps
until the slot comes, so threads are served in the order they asked and no thread spins. Over any interval
``t`` at most ``rate * t + burst`` bytes are taken.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

__all__ = ["ThrottledReader", "TokenBucket", "process_limiter", "throttled"]

#: Bytes a bucket may hand out at once after an idle spell: a tenth of a second's worth, at least 64 KiB.
_MIN_BURST = 64 * 1024


class TokenBucket:
    """At most ``rate`` bytes per second on average, ``burst`` at once; ``clock`` and ``sleep`` are injectable
    (tests drive a fake clock). ``taken`` counts every byte handed out: the limiter's own accounting."""

    def __init__(
        self,
        rate: int,
        *,
        burst: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate < 1:
            raise ValueError(f"a token bucket needs a rate of at least 1 byte per second, got {rate}")
        self.rate = rate
        self.burst = burst if burst is not None else max(rate // 10, _MIN_BURST)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tat = clock()  # the theoretical time at which every byte handed out so far is paid for
        self.taken = 0

    def take(self, n: int) -> None:
        """Wait until ``n`` more bytes fit the rate, then count them (any ``n``: a large one just waits longer)."""
        if n <= 0:
            return
        with self._lock:
            now = self._clock()
            self._tat = max(self._tat, now) + n / self.rate
            delay = self._tat - now - self.burst / self.rate
            self.taken += n
        if delay > 0:
            self._sleep(delay)


class ThrottledReader:
    """A readable stream whose every read first takes what it returned from ``bucket``."""

    def __init__(self, stream: BinaryIO, bucket: TokenBucket) -> None:
        self._stream: Any = stream
        self._bucket = bucket

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        self._bucket.take(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        n = self._stream.readinto(buffer)
        self._bucket.take(n or 0)
        return n

    def close(self) -> None:
        self._stream.close()

    def __getattr__(self, name: str) -> Any:  # seekable(), tell() and the like of the wrapped stream
        return getattr(self._stream, name)

    def __enter__(self) -> ThrottledReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def throttled(stream: BinaryIO, bucket: TokenBucket | None) -> BinaryIO:
    """``stream`` read through ``bucket``; ``stream`` itself without one."""
    return stream if bucket is None else ThrottledReader(stream, bucket)  # type: ignore[return-value]


_limiters: dict[int, TokenBucket] = {}
_limiters_lock = threading.Lock()


def process_limiter(bytes_per_second: int) -> TokenBucket | None:
    """The one bucket of this process for ``bytes_per_second`` (None for 0: unlimited). Every engine and
    pool of the process asking for the same rate shares it, so the rate bounds the process, not each one."""
    if bytes_per_second <= 0:
        return None
    with _limiters_lock:
        bucket = _limiters.get(bytes_per_second)
        if bucket is None:
            bucket = _limiters[bytes_per_second] = TokenBucket(bytes_per_second)
        return bucket
