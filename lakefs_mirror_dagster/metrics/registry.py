"""The registry a process exposes: its status gauges, request histograms, process figures and, for the ``sync``
loop, its pass counters."""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.registry import CollectorRegistry

from ..region import ReplicationService
from .requests import request_metrics
from .status import StatusCollector
from .sync import SyncMetrics

__all__ = ["CONTENT_TYPE", "metrics_registry", "render"]

#: The exposition format's content type (Prometheus text format 0.0.4).
CONTENT_TYPE = CONTENT_TYPE_LATEST


def metrics_registry(service: ReplicationService, *, sync: SyncMetrics | None = None) -> CollectorRegistry:
    """A registry of its own (never the library's global one, so two in one process never clash) with the status
    of ``service``'s mirrors, this process's request histograms and figures (CPU, memory, GC), and ``sync``'s
    counters when given."""
    disable_created_metrics()  # no ``*_created`` series: a timestamp per counter that nothing here reads
    registry = CollectorRegistry(auto_describe=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    request_metrics().register(registry)
    registry.register(StatusCollector(service))
    if sync is not None:
        sync.register(registry)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The registry's current values in the text exposition format."""
    return generate_latest(registry)
