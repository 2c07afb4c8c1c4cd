"""lakeFS actions run where a repository is written, never where it is mirrored, through failover and failback.

The source carries its own lakeFS actions: a webhook on every branch, tag, commit and merge event, which also
refuses branches named ``rejected-*`` before they are created. The commits that hold the action file are mirrored
like any other, and lakeFS (built from its Go module) runs hooks only on repositories that are not read-only: a
mirror's refs move (branches, tags, commit records) and the webhook hears nothing of it. After ``mirrors promote``
the promoted repository is written and its hooks run; after ``mirrors reverse`` the old source is a read-only
mirror, and catching it up is silent again.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.lakefs import LakeFSError
from lakefs_mirror_dagster.refs.reverse import reverse_mirror
from tests.replication.conftest import assert_mirror_equals_source

pytestmark = pytest.mark.integration

EVENTS = (
    "pre-commit", "post-commit", "pre-merge", "post-merge", "pre-create-branch", "post-create-branch",
    "pre-delete-branch", "post-delete-branch", "pre-create-tag", "post-create-tag", "pre-delete-tag",
    "post-delete-tag",
)  # fmt: skip
WAIT_S = 60.0


@dataclass
class Webhook:
    """What the source's actions sent, in arrival order: (event type, repository, branch or tag)."""

    url: str
    heard: list[tuple[str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def repositories(self) -> set[str]:
        with self.lock:
            return {repo for _, repo, _ in self.heard}

    def wait_for(self, event: str, repo: str, ref: str) -> None:
        """Until the webhook heard ``event`` on ``repo``'s ``ref`` (bounded)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            with self.lock:
                if (event, repo, ref) in self.heard:
                    return
            time.sleep(0.1)
        raise AssertionError(f"the webhook never heard {event} on {repo}/{ref}; it heard {self.heard[-10:]}")


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            event, ref = body.get("event_type", ""), body.get("branch_id") or body.get("tag_id") or ""
            with hook.lock:
                hook.heard.append((event, body.get("repository_id", ""), ref))
            refuse = event == "pre-create-branch" and ref.startswith("rejected-")
            self.send_response(400 if refuse else 200)
            self.end_headers()
            self.wfile.write(b"branch names rejected-* are not allowed" if refuse else b"ok")

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/audit"
    thread = threading.Thread(target=server.serve_forever, name="webhook", daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()


def _actions(url: str) -> bytes:
    action = {
        "name": "audit every change",
        "on": {event: {} for event in EVENTS},
        "hooks": [{"id": "audit", "type": "webhook", "properties": {"url": url, "timeout": "10s"}}],
    }
    return yaml.safe_dump(action).encode()


def test_hooks_run_only_where_the_repository_is_written(
    lakefs_env, service_for, config_path, run_cli, unique_name, webhook: Webhook, capsys
) -> None:
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    a, b = svc_a.client("region-a"), svc_b.client("region-b")
    repo, name = unique_name("hooked"), unique_name("hooked-mirror")
    a.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    a.upload_object(repo, "main", "_lakefs_actions/audit.yaml", _actions(webhook.url))
    a.commit(repo, "main", "audit every change")
    a.create_branch(repo, "feature", "main")
    webhook.wait_for("post-create-branch", repo, "feature")  # the source's actions run (after lakeFS's cache)
    a.upload_object(repo, "feature", "data/f.json", b'{"f": 1}')
    a.commit(repo, "feature", "feature work")
    a.merge(repo, "feature", "main")
    a.create_tag(repo, "v1", "main")
    with pytest.raises(LakeFSError, match=r"pre-create-branch|rejected|hook"):
        a.create_branch(repo, "rejected-x", "main")
    assert "rejected-x" not in {r.id for r in a.list_branches(repo)}

    # The mirror converges, action file and all, and its refs move in silence.
    svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    [synced] = svc_b.sync(name=name)
    assert synced.ok, synced.to_json()
    assert_mirror_equals_source(a, repo, b, name)
    a.create_tag(repo, "marker-1", "main")  # after everything the mirror did: the webhook has had its chance
    webhook.wait_for("post-create-tag", repo, "marker-1")
    assert webhook.repositories() == {repo}

    # Failover: the promoted mirror is written, and its hooks run there (the refusal too).
    assert run_cli(config_path("region-b"), "mirrors", "promote", name) == 0
    capsys.readouterr()
    b.upload_object(name, "main", "data/b.json", b'{"b": 1}')
    b.commit(name, "main", "written in B")
    webhook.wait_for("post-commit", name, "main")
    with pytest.raises(LakeFSError, match=r"pre-create-branch|rejected|hook"):
        b.create_branch(name, "rejected-y", "main")

    # Failback: A becomes a read-only mirror of B; catching it up moves its refs in silence.
    reverse_mirror(svc_a, repo, source_region="region-b", source_repository=name)
    assert a.get_repository(repo).read_only
    with webhook.lock:
        heard_from_a = sum(r == repo for _, r, _ in webhook.heard)
    [caught_up] = svc_a.sync(name=repo)
    assert caught_up.ok, caught_up.to_json()
    assert_mirror_equals_source(b, name, a, repo)
    b.create_tag(name, "marker-2", "main")
    webhook.wait_for("post-create-tag", name, "marker-2")
    with webhook.lock:
        assert sum(r == repo for _, r, _ in webhook.heard) == heard_from_a, webhook.heard[-10:]
