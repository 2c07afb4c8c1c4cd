"""The hooks' wake-up queue on SQLite, PostgreSQL and DynamoDB: a region reads only its own wake-ups, oldest
first; queueing a ref again coalesces; an ack removes only what was read, never a wake-up queued since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lakefs_mirror_dagster.mirrors import InvalidMirrorSpec, MirrorsDatabase

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_region_reads_its_wakeups_and_an_ack_never_drops_a_newer_one(store: MirrorsDatabase) -> None:
    store.queue_wakeup("m1", "west", "branch", "main", "post-commit", T0)
    store.queue_wakeup("m1", "west", "tag", "v1", "post-create-tag", T0 + timedelta(seconds=1))
    store.queue_wakeup("m2", "east", "branch", "main", "post-commit", T0)
    read = store.wakeups("west")
    assert [(w.mirror_id, w.kind, w.ref, w.event) for w in read] == [
        ("m1", "branch", "main", "post-commit"),
        ("m1", "tag", "v1", "post-create-tag"),
    ]
    # main changes again while the first wake-up is being handled: it stays queued after the ack
    store.queue_wakeup("m1", "west", "branch", "main", "post-merge", T0 + timedelta(seconds=2))
    assert store.ack_wakeups(read) == 1
    left = store.wakeups("west")
    assert [(w.ref, w.event) for w in left] == [("main", "post-merge")]
    assert store.ack_wakeups(left) == 1
    assert store.wakeups("west") == []
    assert [w.mirror_id for w in store.wakeups("east")] == ["m2"]
    assert store.ack_wakeups([]) == 0


def test_bad_wakeups_are_refused_and_queue_nothing(store: MirrorsDatabase) -> None:
    with pytest.raises(InvalidMirrorSpec, match="ref kind"):
        store.queue_wakeup("m1", "west", "commit", "main", "post-commit", T0)
    with pytest.raises(InvalidMirrorSpec, match="branch name"):
        store.queue_wakeup("m1", "west", "branch", "", "post-commit", T0)
    with pytest.raises(InvalidMirrorSpec, match="timezone-aware"):
        store.queue_wakeup("m1", "west", "branch", "main", "post-commit", datetime(2026, 1, 1))
    assert store.wakeups("west") == []
