"""The wake-up queue of lakeFS action hooks: which refs of which mirrors changed at their source just now.

``serve`` records one wake-up per (mirror, ref kind, ref) a hook names; the ``sync`` loop and the Dagster hooks
sensor of the mirror's destination region read their region's queue every second or so, sync (or request a run
for) each named ref, then acknowledge what they read. A wake-up queued again while it was being handled gets a
new token, so an acknowledgement of the older one leaves it queued: no change is lost between read and ack.
The queue only speeds things up; the polling passes still find every change a lost hook would have named.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from .errors import InvalidMirrorSpec
from .inputs import check_branch

__all__ = ["MAX_WAKEUPS", "WAKEUP_KINDS", "RefWakeup", "check_wakeup", "new_wakeup"]

#: ``ref_kind`` values: the refs a mirror syncs one by one.
WAKEUP_KINDS = ("branch", "tag")
#: Most wake-ups one read returns (the oldest first); the rest wait for the next read.
MAX_WAKEUPS = 1000
_REGION = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


@dataclass(frozen=True)
class RefWakeup:
    """One queued wake-up: a ref of a mirror changed at the source (``event``: the lakeFS event type)."""

    mirror_id: str
    destination_region: str
    kind: str
    ref: str
    event: str
    queued_at: datetime
    #: Changes each time the wake-up is queued again; an ack removes it only while the token is unchanged.
    token: str


def check_wakeup(mirror_id: str, destination_region: str, kind: str, ref: str, event: str) -> None:
    """Refuse what a queue must not hold (``InvalidMirrorSpec``), before anything is written."""
    if not mirror_id or len(mirror_id) > 64:
        raise InvalidMirrorSpec(f"invalid mirror id {mirror_id!r}")
    if not _REGION.match(destination_region):
        raise InvalidMirrorSpec(f"invalid destination region {destination_region!r}")
    if kind not in WAKEUP_KINDS:
        raise InvalidMirrorSpec(f"invalid ref kind {kind!r}: one of {', '.join(WAKEUP_KINDS)}")
    check_branch(ref)
    if len(event) > 64:
        raise InvalidMirrorSpec(f"event type longer than 64 characters: {event[:70]!r}")


def new_wakeup(mirror_id: str, destination_region: str, kind: str, ref: str, event: str, now: datetime) -> RefWakeup:
    """A checked wake-up with a fresh token."""
    check_wakeup(mirror_id, destination_region, kind, ref, event)
    if now.tzinfo is None:
        raise InvalidMirrorSpec(f"naive datetime {now!r}: the mirrors database needs timezone-aware times")
    return RefWakeup(mirror_id, destination_region, kind, ref, event, now, secrets.token_hex(8))
