"""Every route of the app refuses an anonymous caller, except the explicit allow-list (probes, metrics).

The routes are read from the app itself, so a route added later without authentication fails here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import httpx
import pytest
from fastapi.routing import APIRoute
from lakefs_mirror_devenv.processes import free_port
from starlette.routing import Route

from lakefs_mirror_dagster.config import HooksConfig, Secret
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.service import UNAUTHENTICATED_PATHS, create_app, running_server

pytestmark = pytest.mark.integration

#: A valid value per path parameter, so that only authentication can refuse the call.
PATH_VALUES = {"repo": "some-repo", "mirror_id": "m-1"}
BODY = {
    "name": "some-mirror",
    "region": "region-b",
    "storage_namespace": "s3://bucket/x",
    "event_type": "post-commit",
    "repository_id": "some-repo",
}


def _concrete(path: str) -> str:
    return re.sub(r"{(\w+)}", lambda m: PATH_VALUES[m.group(1)], path)


def test_every_route_but_the_allow_list_refuses_anonymous_calls(
    service_for: Callable[[str], ReplicationService],
) -> None:
    service = service_for("region-a")
    # hooks on, with a secret: the hooks route is then reachable, and its own authentication must refuse too
    config = dataclasses.replace(service.config, hooks=HooksConfig(enabled=True, secret=Secret("s3cret")))
    hooked = ReplicationService(config)
    app = create_app(hooked)
    calls = [
        (method, route.path)
        for route in app.routes
        if isinstance(route, APIRoute | Route)
        for method in sorted(route.methods or ()) or ["GET"]
        if method != "HEAD"
    ]
    paths = {path for _, path in calls}
    # the enumeration sees the API: creating, listing, getting, deleting mirrors, stores, hooks, the document
    assert {
        "/service/replication/v1/repositories/{repo}/mirrors",
        "/service/replication/v1/repositories/{repo}/mirrors/{mirror_id}",
        "/service/replication/v1/config/storages",
        "/service/replication/v1/hooks/lakefs",
        "/service/replication/v1/openapi.json",
        "/_health",
    } <= paths
    assert {"/_health", "/_ready", "/metrics"} == UNAUTHENTICATED_PATHS

    with running_server(app, "127.0.0.1", free_port()) as url, httpx.Client(base_url=url, timeout=30) as client:
        for method, path in calls:
            answer = client.request(method, _concrete(path), json=BODY if method in ("POST", "PUT") else None)
            if path in UNAUTHENTICATED_PATHS:
                assert answer.status_code in (200, 503), (method, path, answer.status_code, answer.text)
            else:
                assert answer.status_code == 401, (method, path, answer.status_code, answer.text)
                if path != "/service/replication/v1/hooks/lakefs":  # lakeFS's webhook sends a secret, not Basic
                    assert answer.headers["www-authenticate"].startswith("Basic ")
            # wrong credentials are no better than none
            if path not in UNAUTHENTICATED_PATHS:
                bad = client.request(
                    method,
                    _concrete(path),
                    json=BODY if method in ("POST", "PUT") else None,
                    auth=("AKIAWRONGKEY", "wrong-secret"),
                )
                assert bad.status_code == 401, (method, path, bad.status_code, bad.text)
    hooked.close()
