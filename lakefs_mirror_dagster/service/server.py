"""Running the API with uvicorn: in the foreground for ``lakefs-mirror serve``, or in a thread for tests.

Shutdown is bounded: in-flight requests get ``shutdown_timeout_s`` to finish, then connections close.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI

from ..config import ConfigError
from ..config import parse_listen_address as config_listen_address
from ..lakefs import LakeFSClient
from ..region import ReplicationService
from .app import create_app
from .modes import AuthorizationMode, authorization_mode, lakefs_rbac_model
from .rbac import PolicySet
from .tls import TLSFiles

__all__ = ["parse_listen_address", "running_server", "serve", "startup_mode"]

log = logging.getLogger(__name__)


def parse_listen_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[ipv6]:port`` -> (host, port); a ``ConfigError`` (a ValueError) naming it otherwise."""
    try:
        return config_listen_address(address)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _config(
    app: FastAPI, host: str, port: int, shutdown_timeout_s: float, log_level: str, tls: TLSFiles | None
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        ssl_certfile=tls.cert_file if tls else None,
        ssl_keyfile=tls.key_file if tls else None,
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
    policies_source: str | None = None,
    tls: TLSFiles | None = None,
    shutdown_timeout_s: float = 10.0,
    log_level: str = "info",
) -> None:
    """Serve the API until SIGINT/SIGTERM (uvicorn's handlers), then stop within ``shutdown_timeout_s``.

    Before listening it logs the authorization mode (a warning when no policies limit the callers), whether
    it speaks HTTPS, and a warning when lakeFS hooks are accepted without ``hooks.secret``."""
    host, port = parse_listen_address(listen_address)
    app = create_app(service, policies=policies, user_policies=user_policies)
    mode = startup_mode(service, PolicySet(policies, user_policies), policies_source)
    log.log(logging.WARNING if mode.warning else logging.INFO, "%s", mode.message)
    scheme = "https" if tls else "http"
    log.info(
        "serving on %s://%s:%d%s",
        scheme,
        host,
        port,
        f" (certificate {tls.cert_file})" if tls else " (plain HTTP: terminate TLS in front, see docs/security.md)",
    )
    if service.config.hooks.enabled and not service.config.hooks.secret:
        log.warning("hooks.enabled without hooks.secret: anyone who reaches this server can queue mirror syncs")
    uvicorn.Server(_config(app, host, port, shutdown_timeout_s, log_level.lower(), tls)).run()


def startup_mode(service: ReplicationService, policies: PolicySet, policies_source: str | None) -> AuthorizationMode:
    """The authorization mode ``serve`` logs, with what the region's lakeFS says of its own (asked once, briefly:
    a lakeFS that does not answer delays the start by 5 s at most and is reported as not saying)."""
    config = service.config
    key, secret = config.credentials_for(config.region)
    client = LakeFSClient(config.endpoint_for(config.region), key, secret, attempts=1, timeout_s=5.0)
    try:
        model = lakefs_rbac_model(client)
    finally:
        client.close()
    return authorization_mode(policies, policies_source=policies_source, region=config.region, lakefs_model=model)


@contextlib.contextmanager
def running_server(
    app: FastAPI,
    host: str,
    port: int,
    *,
    start_timeout_s: float = 15.0,
    shutdown_timeout_s: float = 5.0,
    tls: TLSFiles | None = None,
) -> Iterator[str]:
    """Run ``app`` in a daemon thread; yields its base URL (``https://`` with ``tls``); stops it (bounded) on exit."""
    server = uvicorn.Server(_config(app, host, port, shutdown_timeout_s, "warning", tls))
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
        yield f"{'https' if tls else 'http'}://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(shutdown_timeout_s + 5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5)
