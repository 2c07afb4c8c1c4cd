"""The endpoint lakeFS action webhooks call: ``POST /service/replication/v1/hooks/lakefs``.

lakeFS sends the event as JSON (``event_type``, ``repository_id``, ``branch_id``, ``tag_id``, ...) and holds no
credentials of this service, so callers are not asked for lakeFS keys: with ``hooks.secret`` set, the hook must
send that secret (header ``X-Lakefs-Mirror-Secret`` or query parameter ``secret``), compared in constant time.
The answer is 200 for any well-formed event, queued or not (a repository without mirrors, a pre-* event), so a
hook never fails for what it cannot know; 400 for a body that is not such an event, 401 without the secret,
404 while ``hooks.enabled`` is false.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Header, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from ..region import HookEvent, ReplicationService, queue_hook_event
from ..region.hooks import SECRET_HEADER
from .api_errors import ApiError

__all__ = ["HOOKS_PATH", "HookAnswer", "LakeFSHookBody", "add_hooks_route"]

HOOKS_PATH = "/service/replication/v1/hooks/lakefs"


class LakeFSHookBody(BaseModel):
    """The fields of lakeFS's webhook body that name what changed (others, such as ``commit_message``, are
    accepted and not read)."""

    model_config = ConfigDict(extra="ignore")

    event_type: str = Field(min_length=1, max_length=64, description="lakeFS event, e.g. post-commit")
    repository_id: str = Field(min_length=1, max_length=63, description="The source repository")
    branch_id: str = Field(default="", max_length=255, description="The branch (branch events)")
    tag_id: str = Field(default="", max_length=255, description="The tag (tag events)")
    commit_id: str = Field(default="", max_length=128, description="The commit (not needed: heads are read)")


class HookAnswer(BaseModel):
    """How many mirrors of the repository were woken (0: none to wake, or an event that moves no ref)."""

    queued: int
    event_type: str


def add_hooks_route(app: FastAPI, state: Callable[[Request], Any], errors: dict[int | str, dict[str, Any]]) -> None:
    """Register the hooks endpoint on ``app``; ``state(request)`` gives the app's service (``app._state``)."""

    @app.post(
        HOOKS_PATH,
        response_model=HookAnswer,
        responses=errors,
        tags=["hooks"],
        summary="A lakeFS action webhook: wake the mirrors of the repository for the ref it names",
    )
    def lakefs_hook(
        body: LakeFSHookBody,
        request: Request,
        header_secret: Annotated[str | None, Header(alias=SECRET_HEADER, include_in_schema=True)] = None,
        secret: Annotated[str | None, Query(description="hooks.secret, when not sent as a header")] = None,
    ) -> dict[str, Any]:
        service: ReplicationService = state(request).service
        hooks = service.config.hooks
        if not hooks.enabled:
            raise ApiError(404, "lakeFS hooks are not enabled in this region (hooks.enabled)")
        if hooks.secret and not _same(header_secret or secret or "", hooks.secret.reveal()):
            raise ApiError(401, f"a lakeFS hook must send hooks.secret ({SECRET_HEADER} header or ?secret=)")
        event = HookEvent(body.event_type, body.repository_id, branch_id=body.branch_id, tag_id=body.tag_id)
        return {"queued": len(queue_hook_event(service, event)), "event_type": body.event_type}


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())
