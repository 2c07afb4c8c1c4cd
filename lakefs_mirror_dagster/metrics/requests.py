"""Latency histograms of the requests made to lakeFS and to object stores, fed by the engine's timing hooks.

One set per process (the hooks of ``observe`` are process-wide): ``request_metrics()`` creates it and registers its
observer on first use; each registry that exposes it (``serve``'s, the ``sync`` loop's) registers the same objects.
Labels are bounded: the system (``lakefs`` or a store type), an operation class, and no key, URL or id.
"""

from __future__ import annotations

import threading

from prometheus_client import Counter, Histogram
from prometheus_client.registry import CollectorRegistry

from ..observe import add_request_observer

__all__ = ["REQUEST_BUCKETS", "RequestMetrics", "request_metrics"]

#: Seconds: from a HEAD on a local store to a lakeFS commit of a large metarange.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class RequestMetrics:
    """The request histograms and failure counter; ``observe`` is the hook ``observe.timed`` calls."""

    def __init__(self) -> None:
        self.lakefs = Histogram(
            "lakefs_mirror_lakefs_request_duration_seconds",
            "Duration of requests to lakeFS APIs (each attempt of a retried call), by API operation.",
            ["operation"],
            buckets=REQUEST_BUCKETS,
            registry=None,
        )
        self.store = Histogram(
            "lakefs_mirror_store_request_duration_seconds",
            "Duration of object store requests, by store type and operation (head, get, put, delete, copy, list).",
            ["store", "operation"],
            buckets=REQUEST_BUCKETS,
            registry=None,
        )
        self.failures = Counter(
            "lakefs_mirror_request_failures_total",
            "Requests to lakeFS or a store that failed (no answer, 429 or 5xx; a 404 is an answer), "
            "by system and operation.",
            ["system", "operation"],
            registry=None,
        )

    def observe(self, system: str, operation: str, ok: bool, seconds: float) -> None:
        if system == "lakefs":
            self.lakefs.labels(operation).observe(seconds)
        else:
            self.store.labels(system, operation).observe(seconds)
        if not ok:
            self.failures.labels(system, operation).inc()

    def register(self, registry: CollectorRegistry) -> None:
        for collector in (self.lakefs, self.store, self.failures):
            registry.register(collector)


_metrics: RequestMetrics | None = None
_lock = threading.Lock()


def request_metrics() -> RequestMetrics:
    """This process's request metrics, hooked on ``observe`` the first time."""
    global _metrics
    with _lock:
        if _metrics is None:
            _metrics = RequestMetrics()
            add_request_observer(_metrics.observe)
        return _metrics
