"""Ask Dagster to reload a code location, so mirrors created at run time get their assets and sensors.

Dagster builds a code location's definitions only when the location loads. The mirror definitions take their
mirror list from the mirrors database then (the Component's state, refreshed at every load of the code server),
so one reload brings a new mirror in. The request goes to the webserver named by ``$LAKEFS_MIRROR_DAGSTER_URL``
(or the Component's ``dagster_url``), through Dagster's public GraphQL client: what the UI's "Reload" button
does. Without a URL the manager sensor says the location is out of date and an operator reloads it from the UI.

The request runs on a background thread after a short delay, so the sensor tick that asked has returned before
its own code server is replaced.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RELOAD_URL_ENV", "Reload", "reload_through", "request_reload"]

RELOAD_URL_ENV = "LAKEFS_MIRROR_DAGSTER_URL"
log = logging.getLogger(__name__)

#: Asks for a reload of the named code location; returns what it asked, or why it could not.
Reload = Callable[[str], str]


def request_reload(location_name: str, *, url: str = "", delay_seconds: float = 2.0) -> str:
    """Start reloading ``location_name`` in the background through the webserver at ``url`` (default:
    ``$LAKEFS_MIRROR_DAGSTER_URL``); returns what was asked, or why nothing was."""
    url = (url or os.environ.get(RELOAD_URL_ENV, "")).strip()
    if not url:
        return (
            f"code location {location_name} is out of date: reload it from the UI (Deployment, Reload), "
            f"or set {RELOAD_URL_ENV} to the webserver's URL so this sensor reloads it"
        )
    thread = threading.Thread(
        target=_reload, args=(url, location_name, delay_seconds), name="lakefs-mirror-reload", daemon=True
    )
    thread.start()
    return f"asked the webserver at {url} to reload code location {location_name}"


def reload_through(url: str) -> Reload:
    """``request_reload`` bound to ``url`` (empty: ``$LAKEFS_MIRROR_DAGSTER_URL``)."""
    return lambda location_name: request_reload(location_name, url=url)


def _reload(url: str, location_name: str, delay_seconds: float) -> None:
    from dagster_graphql import DagsterGraphQLClient, ReloadRepositoryLocationStatus

    time.sleep(delay_seconds)
    parts = urlsplit(url if "://" in url else f"http://{url}")
    prefix = parts.path.rstrip("/").removesuffix("/graphql")
    # A webserver under a path prefix needs dagster-graphql 1.13 (its client's path_prefix); 1.12's has none.
    behind: dict[str, Any] = {"path_prefix": prefix} if prefix else {}
    try:
        client = DagsterGraphQLClient(
            parts.hostname or "localhost",
            port_number=parts.port,
            use_https=parts.scheme == "https",
            timeout=120,
            **behind,
        )
        info = client.reload_repository_location(location_name)
        if info.status != ReloadRepositoryLocationStatus.SUCCESS:
            log.warning("reloading code location %s via %s: %s %s", location_name, url, info.failure_type, info.message)
    except Exception:
        log.exception("reloading code location %s via %s failed", location_name, url)
