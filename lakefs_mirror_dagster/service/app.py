"""The mirror management REST API of the reference (``/service/replication/v1``), as a FastAPI app.

Every route authenticates the caller against the source region's lakeFS, checks the reference's RBAC
actions, and lets the service layer's exceptions reach one handler (``error_handlers.py``): any
``LakeFSMirrorError`` (an expected failure) becomes its status with a JSON ``{"message": ...}`` and no
traceback; only a bug is a 500 with one.
Route functions are plain ``def``: they call blocking code and FastAPI runs them in its thread pool.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBasic, HTTPBasicCredentials

from ..lakefs import LakeFSError, LakeFSUnauthorized, LakeFSUnavailable
from ..mirrors import Mirror, MirrorNotFound, MirrorState
from ..region import ReplicationService, describe_storages
from ..replication import branch_progress
from . import rbac
from .api_errors import ApiError
from .auth import Authenticator, Identity, lakefs_verifier
from .error_handlers import add_error_handlers
from .hooks import add_hooks_route
from .lakefs_front import LakeFSFront
from .metrics_route import add_metrics_route
from .models import (
    REPOSITORY_NAME,
    ErrorBody,
    MirrorBody,
    MirrorCreation,
    MirrorDeletion,
    MirrorList,
    StorageList,
)

__all__ = [
    "API_PREFIX",
    "OPENAPI_PATH",
    "UNAUTHENTICATED_PATHS",
    "ApiError",
    "create_app",
    "mirror_json",
    "openapi_document",
    "write_openapi",
]

log = logging.getLogger(__name__)

API_PREFIX = "/service/replication/v1"
REALM = 'Basic realm="lakefs-mirror", charset="UTF-8"'
OPENAPI_PATH = f"{API_PREFIX}/openapi.json"
#: The only paths answered without a lakeFS key (probes and Prometheus scrapes); every other route takes the
#: ``Who`` dependency, and ``tests/service/test_authentication.py`` calls each route anonymously to prove it.
#: The hooks route is not here: it authenticates lakeFS's webhook by ``hooks.secret`` (see ``hooks.py``).
UNAUTHENTICATED_PATHS: frozenset[str] = frozenset({"/_health", "/_ready", "/metrics"})


@dataclass
class _State:
    service: ReplicationService
    authenticator: Authenticator
    policies: rbac.PolicySet


def mirror_json(service: ReplicationService, mirror: Mirror) -> dict[str, Any]:
    """A mirror as the API shows it: the stored definition plus each branch's mirrored commit and lag, and the
    progress of a sync advancing it right now (``in_flight``, null when idle)."""
    body = mirror.as_dict()
    body["branches"] = [
        {
            "branch": b.branch,
            "mirrored_commit_id": b.record.mirrored_commit_id if b.record else None,
            "source_commit_id": b.record.source_commit_id if b.record else None,
            "lag_seconds": b.record.lag_seconds if b.record else None,
            "promoted_at": b.record.promoted_at.isoformat() if b.record and b.record.promoted_at else None,
            "in_flight": b.in_flight,
        }
        for b in branch_progress(service.mirrors, mirror.id)
    ]
    body["log_order"] = service.log_order  # "exact", or why same-second commits may be listed in another order
    return body


_basic = HTTPBasic(auto_error=False, realm="lakefs-mirror", description="lakeFS access key id and secret")


def _state(request: Request) -> _State:
    state: _State | None = getattr(request.app.state, "api", None)
    if state is None:  # an app built only to render the OpenAPI document
        raise ApiError(503, "this app has no replication service")
    return state


def _identity(request: Request, credentials: Annotated[HTTPBasicCredentials | None, Depends(_basic)]) -> Identity:
    """Authenticate with the source region's lakeFS (401 with a Basic challenge otherwise)."""
    if credentials is None:
        raise ApiError(401, "authentication required: HTTP Basic with a lakeFS access key", {"WWW-Authenticate": REALM})
    state = _state(request)
    try:
        return state.authenticator.authenticate(credentials.username, credentials.password)
    except LakeFSUnauthorized:
        raise ApiError(401, "invalid lakeFS credentials", {"WWW-Authenticate": REALM}) from None
    except LakeFSUnavailable as exc:
        raise ApiError(503, f"cannot check credentials: {exc}") from None
    except LakeFSError as exc:
        log.info("credential check for key %s failed: %s", credentials.username, exc)
        raise ApiError(401, "credentials were not accepted by lakeFS", {"WWW-Authenticate": REALM}) from None


def _authorize(state: _State, who: Identity, required: Sequence[rbac.Permission]) -> None:
    missing = state.policies.missing(required, user_id=who.user_id, access_key_id=who.access_key_id)
    if missing is not None:
        raise ApiError(403, f"user {who.user_id} is not allowed {missing.action} on {missing.resource}")


RepoParam = Annotated[str, PathParam(pattern=REPOSITORY_NAME, description="Source repository")]
MirrorIdParam = Annotated[str, PathParam(min_length=1, max_length=64, description="Mirror id")]
Who = Annotated[Identity, Depends(_identity)]
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        409: "Conflict",
        503: "Unavailable",
    }.items()
}


def _mirror_of(state: _State, repo: str, mirror_id: str) -> Mirror:
    try:
        mirror = state.service.get_mirror(mirror_id)
    except MirrorNotFound:
        mirror = None
    if mirror is None or mirror.source_repository != repo or mirror.source_region != state.service.config.region:
        raise ApiError(404, f"repository {repo} has no mirror {mirror_id!r}")
    return mirror


def readiness_problems(service: ReplicationService) -> list[str]:
    """What keeps the service from doing its work: the mirrors database or the region's lakeFS not answering
    (each named without its connection details, which may hold credentials)."""
    problems = []
    try:
        service.mirrors.organization_ids()
    except Exception as exc:
        problems.append(f"the mirrors database does not answer ({type(exc).__name__})")
    region = service.config.region
    if not service.client(region).healthy():
        problems.append(f"lakeFS of region {region} at {service.config.endpoint_for(region)} does not answer")
    return problems


def _build(state: _State | None) -> FastAPI:
    app = FastAPI(
        title="lakefs-mirror replication service",
        version="1",
        description="Create, list, inspect and delete mirrors of lakeFS repositories (the reference's REST API).",
        openapi_url=None,  # served below, behind authentication like every route outside UNAUTHENTICATED_PATHS
        docs_url=None,
        redoc_url=None,
    )
    app.state.api = state

    add_error_handlers(app)

    @app.get("/_health", tags=["health"], summary="Liveness (no authentication)")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/_ready",
        tags=["health"],
        summary="Readiness: the mirrors database and this region's lakeFS answer (no authentication)",
        responses={503: {"description": "Not ready: what does not answer"}},
    )
    def ready(request: Request) -> JSONResponse:
        problems = readiness_problems(_state(request).service)
        if problems:
            return JSONResponse({"status": "not ready", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.post(
        f"{API_PREFIX}/repositories/{{repo}}/mirrors",
        status_code=201,
        response_model=MirrorBody,
        responses=ERRORS,
        tags=["mirrors"],
        summary="Create a mirror of a source repository in another region",
    )
    def create_mirror(repo: RepoParam, body: MirrorCreation, who: Who, request: Request) -> dict[str, Any]:
        st = _state(request)
        _authorize(st, who, rbac.create_mirror_permissions(repo, body.name, body.storage_namespace))
        if body.region == st.service.config.region:
            raise ApiError(400, f"region {body.region!r} is the source region; a mirror lives in another region")
        mirror = st.service.create_mirror(
            source_repository=repo,
            name=body.name,
            region=body.region,
            storage_namespace=body.storage_namespace,
            storage_id=body.storage_id,
        )
        log.info("user %s created mirror %s (%s -> %s/%s)", who.user_id, mirror.id, repo, body.region, body.name)
        return mirror_json(st.service, mirror)

    @app.get(
        f"{API_PREFIX}/repositories/{{repo}}/mirrors",
        response_model=MirrorList,
        responses=ERRORS,
        tags=["mirrors"],
        summary="List a repository's mirrors, one page at a time",
    )
    def list_mirrors(
        repo: RepoParam,
        who: Who,
        request: Request,
        after: Annotated[str | None, Query(max_length=64, description="next_offset of the previous page")] = None,
        amount: Annotated[
            int | None, Query(ge=1, le=10_000, description="Page size (at most the configured one)")
        ] = None,
    ) -> dict[str, Any]:
        st = _state(request)
        _authorize(st, who, rbac.list_mirrors_permissions())
        page_size = min(st.service.config.list_mirrors_page_size, amount or 10_000, 10_000)
        page = st.service.list_mirrors(
            source_repository=repo,
            source_region=st.service.config.region,
            page_size=page_size,
            after=after or None,
        )
        results = [mirror_json(st.service, m) for m in page.mirrors]
        return {
            "pagination": {
                "has_more": page.next_after is not None,
                "next_offset": page.next_after or "",
                "results": len(results),
                "max_per_page": page_size,
            },
            "results": results,
        }

    @app.get(
        f"{API_PREFIX}/repositories/{{repo}}/mirrors/{{mirror_id}}",
        response_model=MirrorBody,
        responses=ERRORS,
        tags=["mirrors"],
        summary="Get one mirror with its state and per-branch progress",
    )
    def get_mirror(repo: RepoParam, mirror_id: MirrorIdParam, who: Who, request: Request) -> dict[str, Any]:
        st = _state(request)
        _authorize(st, who, rbac.list_mirrors_permissions())
        return mirror_json(st.service, _mirror_of(st, repo, mirror_id))

    @app.delete(
        f"{API_PREFIX}/repositories/{{repo}}/mirrors/{{mirror_id}}",
        status_code=202,
        response_model=MirrorDeletion,
        responses=ERRORS,
        tags=["mirrors"],
        summary="Delete a mirror: its region then deletes the mirror's repository (named in the answer)",
    )
    def delete_mirror(repo: RepoParam, mirror_id: MirrorIdParam, who: Who, request: Request) -> dict[str, Any]:
        st = _state(request)
        try:
            mirror = _mirror_of(st, repo, mirror_id)
        except ApiError as exc:
            # Permission before existence: a caller who may not delete mirrors gets 403 for any id, so it cannot
            # probe which ids exist. The reference's resource for deleting is the mirror's repository, by id.
            if exc.status == 404:
                _authorize(st, who, rbac.delete_mirror_permissions(mirror_id))
            raise
        _authorize(st, who, rbac.delete_mirror_permissions(mirror.name))
        state = MirrorState(mirror.state)
        if state not in (MirrorState.DELETING, MirrorState.DELETED):
            state = MirrorState(
                st.service.mirrors.set_state(mirror.id, MirrorState.DELETING, f"deleted by {who.user_id}", None).state
            )
            log.warning(
                "user %s deleted mirror %s: repository %s in region %s will be deleted",
                who.user_id,
                mirror.id,
                mirror.name,
                mirror.destination_region,
            )
        return {
            "message": f"mirror {mirror.id} is {state.value}: its repository {mirror.name} in region "
            f"{mirror.destination_region} is deleted by that region's mirrors manager on its next pass (the objects in "
            "its storage namespace stay)",
            "mirror_id": mirror.id,
            "state": state.value,
            "repository": mirror.name,
            "region": mirror.destination_region,
        }

    @app.get(
        f"{API_PREFIX}/config/storages",
        response_model=StorageList,
        responses=ERRORS,
        tags=["config"],
        summary="The stores this region is connected to (a mirror's storage_id names one of them)",
    )
    def list_storages(who: Who, request: Request) -> dict[str, Any]:
        st = _state(request)
        return {"results": [s.as_dict() for s in describe_storages(st.service.config)]}

    add_hooks_route(app, _state, ERRORS)
    add_metrics_route(app, _state)

    @app.get(OPENAPI_PATH, include_in_schema=False)
    def openapi_json(who: Who) -> JSONResponse:
        return JSONResponse(app.openapi())

    original_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        """FastAPI's document without its 422 answers: this API reports bad input as 400."""
        if app.openapi_schema is None:
            doc = original_openapi()
            for operations in doc.get("paths", {}).values():
                for operation in operations.values():
                    operation.get("responses", {}).pop("422", None)
            schemas = doc.get("components", {}).get("schemas", {})
            for unused in ("HTTPValidationError", "ValidationError"):
                schemas.pop(unused, None)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def create_app(
    service: ReplicationService,
    *,
    policies: Sequence[Mapping[str, Any]] | None = None,
    user_policies: Mapping[str, Sequence[str]] | None = None,
    verify: Callable[[str, str], str] | None = None,
) -> FastAPI:
    """The API for ``service``'s region; RBAC is off unless ``policies`` are given (see ``rbac.PolicySet``).

    ``verify(key, secret) -> user id`` defaults to asking the source region's lakeFS (``whoami``). With
    ``lakefs_front.enabled`` the app also fronts that lakeFS: every other path passes through to it.
    """
    config = service.config
    cache = config.auth.cache
    authenticator = Authenticator(
        verify or lakefs_verifier(config.endpoint_for(config.region)),
        cache_enabled=cache.enabled,
        cache_size=cache.size,
        ttl_s=cache.ttl.total_seconds(),
    )
    app = _build(_State(service, authenticator, rbac.PolicySet(policies, user_policies)))
    if config.lakefs_front.enabled:
        app.add_middleware(
            LakeFSFront,
            endpoint=config.endpoint_for(config.region),
            timeout_s=config.lakefs_front.timeout.total_seconds(),
            own_paths=[getattr(route, "path", "") for route in app.routes],
        )
    return app


def openapi_document() -> dict[str, Any]:
    """The API's OpenAPI document (built without a service: nothing is contacted)."""
    return _build(None).openapi()


def write_openapi(path: str | Path) -> Path:
    """Write the OpenAPI document as stable, indented JSON (committed as docs/openapi.json)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n")
    return target
