"""Ask Dagster to reload this code location, so mirrors created at run time get their assets and sensors.

Dagster rebuilds a code location's definitions only when its code server reloads. Two ways to ask,
tried in order:

1. ``$LAKEFS_MIRROR_DAGSTER_URL`` (e.g. ``http://127.0.0.1:3000``): the webserver's public GraphQL
   mutation ``reloadRepositoryLocation`` (what the UI's "Reload" button does).
2. The parent process is a ``dagster code-server start`` proxy (how ``dg dev``/``dagster dev`` and
   ``dagster code-server start`` deployments run user code): its ``ReloadCode`` call restarts the
   subprocess that loads the definitions. The parent's address is read from its command line (Linux
   ``/proc``).

Either way the webserver notices the new server id at once and the daemon picks the new definitions up
at its next workspace refresh (every 60 s). The request runs on a background thread after a short delay,
so the sensor tick that asked has returned before its own code server is replaced.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RELOAD_URL_ENV", "ReloadTarget", "find_reload_target", "request_reload"]

RELOAD_URL_ENV = "LAKEFS_MIRROR_DAGSTER_URL"
_MUTATION = "mutation Reload($name: String!) { reloadRepositoryLocation(repositoryLocationName: $name) { __typename } }"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReloadTarget:
    """Where a reload request goes: a webserver's GraphQL URL, or a code server's gRPC address."""

    graphql_url: str | None = None
    host: str = "localhost"
    port: int | None = None
    socket: str | None = None

    def describe(self) -> str:
        if self.graphql_url:
            return f"webserver {self.graphql_url}"
        return f"code server {self.socket or f'{self.host}:{self.port}'}"


def find_reload_target(environ: dict[str, str] | None = None, ppid: int | None = None) -> ReloadTarget | None:
    """The configured webserver, else the parent ``dagster code-server start`` process, else None."""
    env = os.environ if environ is None else environ
    url = env.get(RELOAD_URL_ENV, "").strip()
    if url:
        return ReloadTarget(graphql_url=url.rstrip("/").removesuffix("/graphql") + "/graphql")
    return _parent_code_server(os.getppid() if ppid is None else ppid)


def _parent_code_server(ppid: int) -> ReloadTarget | None:
    try:
        args = Path(f"/proc/{ppid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    if "code-server" not in args or "start" not in args:
        return None

    def value(flag: str) -> str | None:
        for i, arg in enumerate(args):
            if arg == flag and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
        return None

    port, socket = value("--port") or os.environ.get("DAGSTER_GRPC_PORT"), value("--socket")
    if not port and not socket:
        return None
    host = value("--host") or "localhost"
    if host in ("0.0.0.0", "::"):
        host = "localhost"
    return ReloadTarget(host=host, port=int(port) if port and not socket else None, socket=socket)


def request_reload(location_name: str, *, delay_seconds: float = 2.0, target: ReloadTarget | None = None) -> str:
    """Start reloading ``location_name`` in the background; returns what was asked, or why nothing was."""
    target = target or find_reload_target()
    if target is None:
        return (
            f"no way to reload code location {location_name}: set {RELOAD_URL_ENV} to the webserver URL, "
            "run it under `dagster code-server start` (as dg dev does), or reload it from the UI"
        )
    thread = threading.Thread(
        target=_reload, args=(target, location_name, delay_seconds), name="lakefs-mirror-reload", daemon=True
    )
    thread.start()
    return f"asked {target.describe()} to reload code location {location_name}"


def _reload(target: ReloadTarget, location_name: str, delay_seconds: float) -> None:
    time.sleep(delay_seconds)
    try:
        if target.graphql_url:
            body = json.dumps({"query": _MUTATION, "variables": {"name": location_name}}).encode()
            request = urllib.request.Request(
                target.graphql_url, data=body, headers={"Content-Type": "application/json"}, method="POST"
            )
            with urllib.request.urlopen(request, timeout=120) as response:
                reply = json.loads(response.read())
            kind = ((reply.get("data") or {}).get("reloadRepositoryLocation") or {}).get("__typename")
            if kind != "WorkspaceLocationEntry":
                log.warning("reloading code location %s via %s answered %s", location_name, target.describe(), reply)
            return
        from dagster._grpc.client import DagsterGrpcClient

        DagsterGrpcClient(port=target.port, socket=target.socket, host=target.host).reload_code(timeout=120)
    except Exception:
        log.exception("reloading code location %s via %s failed", location_name, target.describe())
