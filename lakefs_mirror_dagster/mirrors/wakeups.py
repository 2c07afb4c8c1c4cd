"""The wake-up queue of lakeFS action hooks: which refs of which mirrors changed at their source just now.

``serve`` queues one wake-up per (mirror, ref kind, ref) a hook names; the ``sync`` loop and the hooks sensors
of the destination region read it, sync (or request a run for) each ref, then acknowledge. A ref queued again
meanwhile gets a new token, so the older ack leaves it queued: no change is lost between read and ack. Several
sensors may listen at once: a tick *claims* a wake-up (compare-and-set of its token, ``claim_token``), and
records the run it requests (``request_run``), since Dagster deduplicates run keys per sensor only. The queue
only speeds things up: the polling passes still find every change a lost hook would have named.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from .errors import InvalidMirrorSpec
from .inputs import check_branch
from .ref_kinds import REF_KINDS

__all__ = [
    "CLAIM_LEASE",
    "LOST_REQUEST",
    "MAX_WAKEUPS",
    "RefWakeup",
    "check_run_request",
    "check_wakeup",
    "claim_token",
    "claimed",
    "new_wakeup",
]

#: Most wake-ups one read returns (the oldest first); the rest wait for the next read.
MAX_WAKEUPS = 1000
#: A claimed wake-up's token starts with this (a queued one is hex digits only).
CLAIM_PREFIX = "@"
#: How long a claim holds: a tick that claimed a wake-up and died leaves it to the next tick after this (a
#: Dagster sensor tick times out at 60 s, so a live tick never holds a claim that long).
CLAIM_LEASE = timedelta(seconds=90)
#: How long a recorded run request holds against other sensors when no run with its key exists: a tick that
#: recorded it and died before returning it to Dagster loses it to the others after this.
LOST_REQUEST = timedelta(minutes=5)
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
    if kind not in REF_KINDS:
        raise InvalidMirrorSpec(f"invalid ref kind {kind!r}: one of {', '.join(REF_KINDS)}")
    check_branch(ref)
    if len(event) > 64:
        raise InvalidMirrorSpec(f"event type longer than 64 characters: {event[:70]!r}")


def new_wakeup(mirror_id: str, destination_region: str, kind: str, ref: str, event: str, now: datetime) -> RefWakeup:
    """A checked wake-up with a fresh token."""
    check_wakeup(mirror_id, destination_region, kind, ref, event)
    if now.tzinfo is None:
        raise InvalidMirrorSpec(f"naive datetime {now!r}: the mirrors database needs timezone-aware times")
    return RefWakeup(mirror_id, destination_region, kind, ref, event, now, secrets.token_hex(8))


def claim_token(now: datetime) -> str:
    """The token a claim at ``now`` writes: ``@``, the time in whole seconds (10 digits), 16 hex digits.

    Exactly one tick takes a wake-up by swapping its token for a claim token. An ack of the claim token removes
    it; a hook that queues the ref again meanwhile replaces the token, so it is served again. A claim older than
    ``CLAIM_LEASE`` (its tick died) is taken like an unclaimed wake-up.
    """
    return f"{CLAIM_PREFIX}{int(now.timestamp()):010d}{secrets.token_hex(8)}"


def claimed(wake: RefWakeup, now: datetime) -> bool:
    """Whether a tick holds ``wake`` at ``now``: claimed less than ``CLAIM_LEASE`` ago."""
    if not wake.token.startswith(CLAIM_PREFIX):
        return False
    try:
        at = datetime.fromtimestamp(int(wake.token[1:11]), UTC)
    except ValueError:
        return False
    return now - at < CLAIM_LEASE


def with_token(wake: RefWakeup, token: str) -> RefWakeup:
    return replace(wake, token=token)


def check_run_request(mirror_id: str, kind: str, ref: str, run_key: str, requester: str, now: datetime) -> None:
    """Refuse a run request record the store must not hold (``InvalidMirrorSpec``)."""
    if not mirror_id or len(mirror_id) > 64:
        raise InvalidMirrorSpec(f"invalid mirror id {mirror_id!r}")
    if kind not in REF_KINDS:
        raise InvalidMirrorSpec(f"invalid ref kind {kind!r}: one of {', '.join(REF_KINDS)}")
    if kind == "branch":
        check_branch(ref)
    if not run_key or len(run_key) > 1024 or not requester or len(requester) > 255:
        raise InvalidMirrorSpec(f"invalid run request {run_key[:80]!r} by {requester[:80]!r}")
    if now.tzinfo is None:
        raise InvalidMirrorSpec(f"naive datetime {now!r}: the mirrors database needs timezone-aware times")
