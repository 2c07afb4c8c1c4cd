"""Running the API with uvicorn: in the foreground for ``lakefs-mirror serve``, or in a thread for tests.

Shutdown is bounded: in-flight requests get ``shutdown_timeout_s`` to finish, then connections close.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI

from ..config import ConfigError
from ..config import parse_listen_address as config_listen_address
from ..replication import ReplicationService
from .app import create_app

__all__ = ["parse_listen_address", "running_server", "serve"]


def parse_listen_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[ipv6]:port`` -> (host, port); a ``ConfigError`` (a ValueError) naming it otherwise."""
    try:
        return config_listen_address(address)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _config(app: FastAPI, host: str, port: int, shutdown_timeout_s: float, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=max(1, int(shutdown_timeout_s)),
        lifespan="on",  # the lakeFS front closes its connections on shutdown
        access_log=log_level == "debug",
    )


def serve(
    service: ReplicationService,
    listen_address: str,
    *,
    policies: Sequence[Mapping[str, Any]] | None = None,
    user_policies: Mapping[str, Sequence[str]] | None = None,
    shutdown_timeout_s: float = 10.0,
    log_level: str = "info",
) -> None:
    """Serve the API until SIGINT/SIGTERM (uvicorn's handlers), then stop within ``shutdown_timeout_s``."""
    host, port = parse_listen_address(listen_address)
    app = create_app(service, policies=policies, user_policies=user_policies)
    uvicorn.Server(_config(app, host, port, shutdown_timeout_s, log_level.lower())).run()


@contextlib.contextmanager
def running_server(
    app: FastAPI,
    host: str,
    port: int,
    *,
    start_timeout_s: float = 15.0,
    shutdown_timeout_s: float = 5.0,
) -> Iterator[str]:
    """Run ``app`` in a daemon thread; yields its base URL; stops it (bounded) on exit."""
    server = uvicorn.Server(_config(app, host, port, shutdown_timeout_s, "warning"))
    thread = threading.Thread(target=server.run, name=f"api-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"API server on {host}:{port} exited during startup")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise TimeoutError(f"API server on {host}:{port} did not start within {start_timeout_s}s")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(shutdown_timeout_s + 5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)
