"""The lakeFS action file that calls ``serve``'s hooks endpoint, written into a source repository on request.

lakeFS reads action files from ``_lakefs_actions/`` of the ref an event happens on, so the file is committed
to the repository's default branch: that branch and every branch created from it afterwards call the hook;
branches that existed before keep being found by the polling passes. Installing is idempotent: a file with the
same content is left alone (no commit). The file changes the source repository (one object, one commit), which
is why ``mirrors create`` only writes it when asked (``--install-hooks``).
"""

from __future__ import annotations

import yaml

from ..lakefs import LakeFSClient, LakeFSNotFound
from .hooks import HOOK_EVENTS, SECRET_HEADER

__all__ = ["ACTION_PATH", "SECRET_ENV", "action_file", "install_hooks"]

ACTION_PATH = "_lakefs_actions/lakefs-mirror.yaml"
#: With ``hooks.secret`` set, the action sends lakeFS's ``$LAKEFSACTION_MIRROR_HOOK_SECRET`` (lakeFS passes only
#: variables with its ``actions.env.prefix``, ``LAKEFSACTION_`` by default), so the secret is never in the file.
SECRET_ENV = "LAKEFSACTION_MIRROR_HOOK_SECRET"


def action_file(url: str, *, with_secret: bool) -> bytes:
    """The action: every post-* event that moves a branch or a tag calls ``url`` (lakeFS runs post hooks after
    the operation and never fails it for them)."""
    hook: dict[str, object] = {"url": url, "timeout": "10s"}
    if with_secret:
        hook["headers"] = {SECRET_HEADER: "{{ ENV." + SECRET_ENV + " }}"}
    action = {
        "name": "lakefs-mirror",
        "description": "Wakes lakefs-mirror's replication for the ref that changed (mirrors create --install-hooks)",
        "on": {event: None for event in HOOK_EVENTS},
        "hooks": [{"id": "lakefs_mirror_wake", "type": "webhook", "properties": hook}],
    }
    return yaml.safe_dump(action, sort_keys=False).encode()


def install_hooks(client: LakeFSClient, repository: str, url: str, *, with_secret: bool) -> str | None:
    """Commit the action file to ``repository``'s default branch; the commit ID, or None when it was there."""
    content = action_file(url, with_secret=with_secret)
    branch = client.get_repository(repository).default_branch
    try:
        if client.get_object(repository, branch, ACTION_PATH) == content:
            return None
    except LakeFSNotFound:
        pass
    client.upload_object(repository, branch, ACTION_PATH, content)
    return client.commit(
        repository, branch, "lakefs-mirror: call the replication service's hook on every ref change"
    ).id
