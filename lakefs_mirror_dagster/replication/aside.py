"""Work started on a thread of its own, its result (or its error) collected later with ``Future.result``.

For one-off work beside the caller that lets go of the GIL (a read from a store, ``hashlib`` on a large buffer):
a daemon thread per call, no pool to start or shut down.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

__all__ = ["aside"]

T = TypeVar("T")


def aside(work: Callable[[], T], *, name: str) -> Future[T]:
    """Start ``work`` on a daemon thread called ``name``; its ``Future`` gives its result or raises its error."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # handed to whoever asks, as the work done then would raise it
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
