"""``lakefs-mirror status``'s text form: where each branch is, and a sync in flight (or a stale one) under it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from lakefs_mirror_dagster.mirrors import RefInFlight
from lakefs_mirror_dagster.region.status import BranchStatus, MirrorStatus, format_status, stale
from lakefs_mirror_dagster.replication.in_flight import in_flight_view

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _flight(updated_s: float, now_s: float) -> dict[str, object]:
    updated = T0 + timedelta(seconds=updated_s)
    record = RefInFlight("m", "branch", "dev", "b" * 64, T0, updated, ranges_planned=1, objects_planned=40)
    record = dataclasses.replace(record, objects_done=10, bytes_done=2_500_000)
    return in_flight_view(record, T0 + timedelta(seconds=now_s))


def test_text_shows_each_branch_and_what_is_in_flight() -> None:
    branches = [
        BranchStatus("dev", None, None, False, None, None, [], None, _flight(20, 21)),
        BranchStatus("main", "a" * 64, "a" * 64, True, 1.5, T0, [], 0.0),
        BranchStatus("old", "c" * 64, "d" * 64, False, None, None, [], 30.0, _flight(20, 500)),
    ]
    report = [MirrorStatus("west", "us-east-1", "sales", "active", "", branches)]
    assert format_status(report).splitlines() == [
        "mirror west (active) of us-east-1/sales",
        "  branch dev: not mirrored yet",
        "    in flight to bbbbbbbbbbbbbbbb: objects 10/40, ranges 0/1, 2.5 MB copied, eta 59s, 20s elapsed",
        "  branch main: in sync at aaaaaaaaaaaaaaaa, lag 1.5s",
        "  branch old: behind cccccccccccccccc for 30s (mirror at dddddddddddddddd)",
        "    STALE: was syncing to bbbbbbbbbbbbbbbb (objects 10/40, ranges 0/1, 2.5 MB copied), not updated "
        "for 480s: its process died or lost the database",
    ]
    # A branch whose first sync is in flight has nothing recorded yet: freshness judges it once that sync ends.
    behind = "mirror west branch old is 30s behind its source head " + "c" * 64 + " (more than 10s)"
    assert stale(report, 10) == [behind]
