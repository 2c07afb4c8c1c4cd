"""One budget of bytes in flight, shared by every streamed copy of a transfer pool.

A streamed copy holds its buffered parts in memory (those being sent and the one being filled; a single-part
object whole). Bounding the number of copies bounds memory only as far as parts are small; a budget of bytes
bounds it whatever the object sizes: each copy reserves its part buffers (``Blockstore.write_buffer_size``)
before reading the first byte and gives them back when the last part is stored. Requests are served in
arrival order (a large one is not starved by many small ones), and a request larger than the whole budget is
granted the whole budget, so an object bigger than the budget still copies, alone.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from ..config.sections import DEFAULT_MAX_BYTES_IN_FLIGHT

__all__ = ["DEFAULT_MAX_BYTES_IN_FLIGHT", "ByteBudget"]


class ByteBudget:
    """A semaphore counting bytes: ``hold(n)`` waits until ``n`` bytes (at most ``capacity``) are free."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a byte budget needs a positive capacity, got {capacity}")
        self.capacity = capacity
        self._free = capacity
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        #: The most bytes held at once so far (what the budget let through; tests and benchmarks read it).
        self.peak = 0

    @property
    def in_use(self) -> int:
        with self._cond:
            return self.capacity - self._free

    def acquire(self, n: int) -> int:
        """Wait for ``n`` bytes (capped at the capacity) and take them; returns how many were taken."""
        want = min(max(n, 0), self.capacity)
        if want == 0:
            return 0
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            try:
                self._cond.wait_for(lambda: self._queue[0] is ticket and self._free >= want)
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()  # the next in line may fit too
            self._free -= want
            self.peak = max(self.peak, self.capacity - self._free)
        return want

    def release(self, n: int) -> None:
        """Give back bytes ``acquire`` returned."""
        if n <= 0:
            return
        with self._cond:
            if self._free + n > self.capacity:
                raise ValueError("released more bytes than were acquired")
            self._free += n
            self._cond.notify_all()

    @contextmanager
    def hold(self, n: int) -> Iterator[int]:
        """``acquire(n)`` for the duration of a ``with`` block."""
        taken = self.acquire(n)
        try:
            yield taken
        finally:
            self.release(taken)
