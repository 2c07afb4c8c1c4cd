"""A ref in flight: the record of a branch or tag that an engine is advancing right now, with its progress.

The engine that syncs a ref writes this record at its progress cadence while it plans, transfers and validates,
and removes it when the ref is done (promoted, blocked or failed). Any process sharing the mirrors database (the
REST API, ``status``) can thus show what is being synced and how far it got. A record whose ``updated_at`` is old
was left by a process that died: readers show it as stale (``replication/in_flight.py``), never as in flight.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from .errors import InvalidMirrorSpec
from .inputs import check_branch
from .ref_kinds import REF_KINDS

__all__ = ["COUNTERS", "RefInFlight", "check_in_flight"]

#: The progress counters, named as ``replication.progress.Progress`` names them.
COUNTERS = ("ranges_planned", "ranges_done", "objects_planned", "objects_done", "bytes_done")


@dataclass(frozen=True)
class RefInFlight:
    """One ref being advanced to ``source_commit_id``: since when, last written when, and its counters."""

    mirror_id: str
    kind: str
    ref: str
    source_commit_id: str
    started_at: datetime
    updated_at: datetime
    ranges_planned: int = 0
    ranges_done: int = 0
    objects_planned: int = 0
    objects_done: int = 0
    bytes_done: int = 0

    def counters(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTERS}

    def as_row(self) -> dict[str, Any]:
        """The record's fields by name (what both stores write)."""
        return asdict(self)


def check_in_flight(record: object) -> RefInFlight:
    """``record`` if it can be stored, else ``InvalidMirrorSpec`` naming the field (nothing is written)."""
    if not isinstance(record, RefInFlight):
        raise InvalidMirrorSpec(f"an in-flight record must be a RefInFlight, got {type(record).__name__}")
    if record.kind not in REF_KINDS:
        raise InvalidMirrorSpec(f"invalid ref kind {record.kind!r} (expected one of {', '.join(REF_KINDS)})")
    check_branch(record.ref)
    commit = record.source_commit_id
    if not isinstance(commit, str) or not 0 < len(commit) <= 128:
        raise InvalidMirrorSpec("source_commit_id must be a non-empty string of at most 128 characters")
    for name in ("started_at", "updated_at"):
        when = getattr(record, name)
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise InvalidMirrorSpec(f"{name} must be a timezone-aware datetime, got {when!r}")
    for name, value in record.counters().items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidMirrorSpec(f"{name} must be a count (an integer >= 0), got {value!r}")
    return record
