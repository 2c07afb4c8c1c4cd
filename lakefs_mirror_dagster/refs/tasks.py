"""Waiting on lakeFS's asynchronous operations: dump and restore tasks, and repository deletion.

lakeFS runs refs dumps and restores as tasks whose status is polled, and deletes a repository in the
background: the name stays taken (``get`` answers 200, ``create`` 409) for a few seconds after the delete
call returns. Every wait here is bounded both in number of polls and in time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backoff import Backoff
from ..lakefs import LakeFSClient, LakeFSNotFound
from .errors import RefsError

__all__ = ["DEFAULT_POLLING", "TaskPolling", "delete_repository_and_wait", "wait_for_task"]


@dataclass(frozen=True)
class TaskPolling:
    """Poll on the package's ``Backoff``: the first wait within ``interval_s``, doubling up to ``max_interval_s``,
    at most ``max_polls`` times and ``timeout_s`` seconds in all."""

    interval_s: float = 0.1
    max_interval_s: float = 2.0
    timeout_s: float = 600.0
    max_polls: int = 5000


DEFAULT_POLLING = TaskPolling()


def _poll(what: str, probe: Callable[[], Any | None], polling: TaskPolling) -> Any:
    """Call ``probe`` until it returns something other than None; RefsError when the bounds run out."""
    tries = Backoff(
        base=polling.interval_s,
        cap=polling.max_interval_s,
        attempts=max(1, polling.max_polls),
        deadline=polling.timeout_s,
    ).start()
    while True:
        result = probe()
        if result is not None:
            return result
        if not tries.wait():
            break
    raise RefsError(
        f"{what}: not finished after {polling.timeout_s:.0f}s ({polling.max_polls} polls at most); "
        "lakeFS may still complete it: check the repository before retrying"
    )


def wait_for_task(
    client: LakeFSClient, repo: str, task_id: str, kind: str, polling: TaskPolling = DEFAULT_POLLING
) -> Any:
    """Wait for a ``dump`` or ``restore`` task of ``repo``; returns its final status (``error`` may be set)."""
    status_fn = client.repositories.dump_status if kind == "dump" else client.repositories.restore_status

    def probe() -> Any | None:
        status = client.call(f"{kind} status of {repo} (task {task_id})", status_fn, repo, task_id)
        return status if status.done else None

    return _poll(f"refs {kind} of {repo} (task {task_id})", probe, polling)


def delete_repository_and_wait(
    client: LakeFSClient, repo: str, *, force: bool = False, polling: TaskPolling = DEFAULT_POLLING
) -> None:
    """Delete ``repo``'s record (never its data) and wait until lakeFS has released the name."""
    client.delete_repository(repo, force=force)

    def gone() -> bool | None:
        try:
            client.get_repository(repo)
        except LakeFSNotFound:
            return True
        return None

    _poll(f"deletion of repository {repo}", gone, polling)
