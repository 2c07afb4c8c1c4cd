"""The ``sync`` loop's metrics listener: ``GET /metrics`` on an address of its own, in a daemon thread."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.registry import CollectorRegistry

from ..config import ConfigError, parse_listen_address

__all__ = ["MetricsServer", "start_metrics_server"]

log = logging.getLogger(__name__)


@dataclass
class MetricsServer:
    """A running listener; ``url`` is where Prometheus scrapes it, ``stop()`` ends it."""

    server: WSGIServer
    thread: Thread
    url: str

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def start_metrics_server(
    address: str, registry: CollectorRegistry, *, what: str = "metrics.listen_address"
) -> MetricsServer:
    """Serve ``registry`` at ``http://address/metrics``; a ``ConfigError`` naming ``what`` (the config key or flag)
    for an address that is not ``host:port`` or cannot be listened on (in use, not this machine's, no permission)."""
    try:
        host, port = parse_listen_address(address)
    except ValueError as exc:
        raise ConfigError(f"{what}: {exc}") from None
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ConfigError(f"{what}: cannot listen on {address!r}: {exc.strerror or exc}") from None
    bound_host, bound_port = server.server_address[:2]
    host_text = bound_host.decode() if isinstance(bound_host, bytes) else str(bound_host)
    shown = f"[{host_text}]" if ":" in host_text else host_text
    url = f"http://{shown}:{bound_port}/metrics"
    log.info("metrics at %s", url)
    return MetricsServer(server, thread, url)
