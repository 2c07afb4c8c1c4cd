"""Prometheus metrics of ``serve`` and of the ``sync`` loop (docs/metrics.md lists them).

The engine knows nothing of Prometheus: it reports finished passes to ``ReplicationService.on_synced`` listeners
and times its requests through ``observe``'s hooks; this package turns both, and the mirrors' status
(``region.status``), into metrics.
"""

from .registry import CONTENT_TYPE, metrics_registry, render
from .requests import RequestMetrics, request_metrics
from .server import MetricsServer, start_metrics_server
from .status import StatusCollector
from .sync import ERROR_KINDS, SyncMetrics

__all__ = [
    "CONTENT_TYPE",
    "ERROR_KINDS",
    "MetricsServer",
    "RequestMetrics",
    "StatusCollector",
    "SyncMetrics",
    "metrics_registry",
    "render",
    "request_metrics",
    "start_metrics_server",
]
