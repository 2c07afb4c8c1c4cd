"""Hooks that time the requests the engine makes to lakeFS and to object stores, for whoever listens.

The lakeFS client and every blockstore report each request here (``timed``): which system (``lakefs`` or a store
type such as ``s3``), an operation class (an API method's name, or ``head``/``get``/``put``/``delete``/``copy``),
whether it failed, and how long it took. With no observer registered (the default, and inside Spark tasks) the
cost is one empty-list check. ``lakefs_mirror_dagster.metrics`` registers one that feeds Prometheus histograms;
nothing here knows Prometheus, and no object key, URL or commit id is ever passed on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Request", "RequestObserver", "add_request_observer", "observing", "remove_request_observer", "timed"]

#: ``(system, operation, ok, seconds)``: one finished request.
RequestObserver = Callable[[str, str, bool, float], None]

_observers: list[RequestObserver] = []
_lock = threading.Lock()


def add_request_observer(observer: RequestObserver) -> None:
    """From now on ``observer`` hears every timed request of this process (it must be fast and never raise)."""
    with _lock:
        if observer not in _observers:
            _observers.append(observer)


def remove_request_observer(observer: RequestObserver) -> None:
    with _lock:
        if observer in _observers:
            _observers.remove(observer)


def observing() -> bool:
    """Whether anyone listens (callers skip their timing when nobody does)."""
    return bool(_observers)


class Request:
    """One timed request. ``failed`` left None: it failed when an exception left the block. A caller sets it
    when it knows better: an error answer that is an answer (404 for an object that is not there) is no failure,
    a 5xx answer returned without an exception is one."""

    __slots__ = ("failed",)

    def __init__(self) -> None:
        self.failed: bool | None = None


@contextmanager
def timed(system: str, operation: str) -> Iterator[Request]:
    """Time the block as one request of ``system`` and tell the observers, if any."""
    request = Request()
    if not _observers:
        yield request
        return
    start = time.perf_counter()
    raised = True
    try:
        yield request
        raised = False
    finally:
        seconds = time.perf_counter() - start
        ok = not (raised if request.failed is None else request.failed)
        for observer in list(_observers):
            observer(system, operation, ok, seconds)
