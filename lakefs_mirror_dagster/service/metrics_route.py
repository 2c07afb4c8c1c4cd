"""``GET /metrics``: the service's Prometheus metrics, unauthenticated like lakeFS's own ``/metrics`` and like
``/_health`` and ``/_ready`` (a scraper holds no lakeFS key; the figures name mirrors and branches, no data)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request, Response

from ..metrics import CONTENT_TYPE, metrics_registry, render

__all__ = ["METRICS_PATH", "add_metrics_route"]

METRICS_PATH = "/metrics"


def add_metrics_route(app: FastAPI, state: Callable[[Request], Any]) -> None:
    """Register ``GET /metrics`` on ``app``; ``state(request).service`` is the app's service. Its registry is built
    on the first scrape (an app built only for its OpenAPI document never builds one)."""
    lock = threading.Lock()

    @app.get(METRICS_PATH, include_in_schema=False)
    def metrics(request: Request) -> Response:
        with lock:
            registry = getattr(app.state, "metrics_registry", None)
            if registry is None:
                registry = app.state.metrics_registry = metrics_registry(state(request).service)
        return Response(render(registry), media_type=CONTENT_TYPE)
