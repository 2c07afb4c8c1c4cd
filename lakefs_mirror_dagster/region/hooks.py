"""lakeFS action hooks turned into wake-ups: which refs of which mirrors a hook's event names.

A lakeFS webhook names a repository of the region that serves it and the branch or tag that changed. Every
mirror of that repository (in this organisation, from this region) gets one wake-up per named ref in the
mirrors database (``mirrors/wakeups.py``), which the ``sync`` loop and the Dagster hooks sensor of the mirror's
region read. A hook for a repository without mirrors, or for an event that changes no ref, queues nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..mirrors import Mirror, MirrorNotFound, RefWakeup
from ..mirrors.wakeups import claimed
from ..replication import MirrorSyncResult
from .service import RETIRING, ReplicationService

__all__ = [
    "BRANCH_EVENTS",
    "HOOK_EVENTS",
    "SECRET_HEADER",
    "TAG_EVENTS",
    "HookEvent",
    "WokenMirror",
    "claim_woken",
    "queue_hook_event",
    "read_woken",
    "sync_woken",
    "wait_woken",
]

log = logging.getLogger(__name__)

#: lakeFS events after which a branch may point elsewhere (the ref is ``branch_id``).
BRANCH_EVENTS = frozenset(
    {
        "post-commit",
        "post-merge",
        "post-create-branch",
        "post-delete-branch",
        "post-revert",
        "post-cherry-pick",
    }
)
#: lakeFS events after which a tag exists or is gone (the ref is ``tag_id``).
TAG_EVENTS = frozenset({"post-create-tag", "post-delete-tag"})
#: The header (or query parameter ``secret``) a hook sends ``hooks.secret`` in.
SECRET_HEADER = "X-Lakefs-Mirror-Secret"
#: The events an action file should send (``mirrors create --install-hooks`` writes these).
HOOK_EVENTS = tuple(sorted(BRANCH_EVENTS | TAG_EVENTS))


@dataclass(frozen=True)
class HookEvent:
    """The fields of lakeFS's webhook body this service reads (lakeFS's ``actions.EventInfo``)."""

    event_type: str
    repository_id: str
    branch_id: str = ""
    tag_id: str = ""

    def ref(self) -> tuple[str, str] | None:
        """(kind, name) of the ref the event changed, or None when it changed none (pre-* events, ...)."""
        if self.event_type in BRANCH_EVENTS and self.branch_id:
            return "branch", self.branch_id
        if self.event_type in TAG_EVENTS and self.tag_id:
            return "tag", self.tag_id
        return None


def queue_hook_event(service: ReplicationService, event: HookEvent) -> list[RefWakeup]:
    """Queue a wake-up of the event's ref for every live mirror of its repository; returns what was queued."""
    ref = event.ref()
    if ref is None:
        return []
    kind, name = ref
    now = dt.datetime.now(dt.UTC)
    queued = []
    for mirror in service.iter_mirrors(source_repository=event.repository_id, source_region=service.config.region):
        if mirror.state in RETIRING:
            continue
        queued.append(
            service.mirrors.queue_wakeup(mirror.id, mirror.destination_region, kind, name, event.event_type, now)
        )
    log.info(
        "hook %s on %s %s of %s: %d mirror(s) woken",
        event.event_type,
        kind,
        name,
        event.repository_id,
        len(queued),
    )
    return queued


@dataclass
class WokenMirror:
    """One mirror of this region with queued wake-ups: the branches they name and whether a tag changed."""

    mirror: Mirror
    branches: list[str] = field(default_factory=list)
    tags: bool = False
    wakeups: list[RefWakeup] = field(default_factory=list)


def read_woken(service: ReplicationService, *, name: str | None = None) -> tuple[list[WokenMirror], list[RefWakeup]]:
    """This region's queued wake-ups (one read of the queue), grouped by mirror: those of its mirrors (only
    the one called ``name``, if given), and without ``name`` those of mirrors that no longer exist (a hook
    raced a deletion), which the caller acknowledges at once. Another organisation's are left to its regions, and
    those a listening tick claimed (``wakeups.py``) to that tick while its claim holds."""
    now = dt.datetime.now(dt.UTC)
    queued = [w for w in service.mirrors.wakeups(service.config.region) if not claimed(w, now)]
    if not queued:
        return [], []
    mine = {m.id: m for m in service.my_mirrors(name=name) if m.state not in RETIRING}
    woken: dict[str, WokenMirror] = {}
    stray: list[RefWakeup] = []
    for wake in queued:
        mirror = mine.get(wake.mirror_id)
        if mirror is None:
            if name is None and _gone(service, wake.mirror_id):
                stray.append(wake)
            continue
        _add(woken.setdefault(mirror.id, WokenMirror(mirror)), wake)
    return list(woken.values()), stray


def _add(entry: WokenMirror, wake: RefWakeup) -> None:
    entry.wakeups.append(wake)
    if wake.kind == "tag":
        entry.tags = True
    elif wake.ref not in entry.branches:
        entry.branches.append(wake.ref)


def claim_woken(service: ReplicationService, woken: Sequence[WokenMirror]) -> list[WokenMirror]:
    """Claim the wake-ups ``read_woken`` returned (``wakeups.py``): what this caller got, which no other
    listening tick gets while the claim holds; acknowledging them (their claim tokens) removes them."""
    now = dt.datetime.now(dt.UTC)
    taken: list[WokenMirror] = []
    for entry in woken:
        mine = WokenMirror(entry.mirror)
        for wake in service.mirrors.claim_wakeups(entry.wakeups, now):
            _add(mine, wake)
        if mine.wakeups:
            taken.append(mine)
    return taken


def wait_woken(
    service: ReplicationService, until: float, *, name: str | None = None, claim: bool = False
) -> list[WokenMirror]:
    """Read the wake-up queue every ``hooks.poll_interval`` until it names refs of this region's mirrors (only
    the one called ``name``, if given) or ``until`` (``time.monotonic()``) comes: those mirrors, or [] then.
    Wake-ups of mirrors that no longer exist are acknowledged on the way. One read even when ``until`` has passed.
    With ``claim``, only wake-ups this caller claimed count: one another tick claimed first is not returned."""
    poll = service.config.hooks.poll_interval.total_seconds()
    for _ in range(int(max(0.0, until - time.monotonic()) / poll) + 2):
        woken, stray = read_woken(service, name=name)
        if stray:
            service.mirrors.ack_wakeups(stray)
        if woken and claim:
            woken = claim_woken(service, woken)
        if woken:
            return woken
        left = until - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(poll, left))
    return []


def sync_woken(
    service: ReplicationService, woken: Sequence[WokenMirror], *, branches: Sequence[str] = ()
) -> list[MirrorSyncResult]:
    """Sync the refs the wake-ups name (only ``branches`` among them, if given), then acknowledge them. A ref
    that stays behind is the retry schedule's and the polling passes' to finish, as for any sync."""
    results: list[MirrorSyncResult] = []
    for entry in woken:
        wanted = [b for b in entry.branches if not branches or b in branches]
        if wanted or entry.tags:
            results.extend(service.sync(name=entry.mirror.name, branches=wanted, tags=entry.tags))
        service.mirrors.ack_wakeups(entry.wakeups)
    return results


def _gone(service: ReplicationService, mirror_id: str) -> bool:
    try:
        service.mirrors.get_mirror(mirror_id)
    except MirrorNotFound:
        return True
    return False
