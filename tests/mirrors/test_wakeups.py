"""The hooks' wake-up queue on SQLite, PostgreSQL and DynamoDB: a region reads only its own wake-ups, oldest
first; queueing a ref again coalesces; an ack removes only what was read, never a wake-up queued since; of ticks
racing for a wake-up exactly one claims it; of sensors racing for a ref's run key exactly one records it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lakefs_mirror_dagster.mirrors import InvalidMirrorSpec, MirrorsDatabase
from lakefs_mirror_dagster.mirrors.wakeups import CLAIM_LEASE, LOST_REQUEST, claimed

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


def test_exactly_one_of_two_racing_ticks_claims_a_wakeup_and_a_dead_ticks_claim_lapses(store: MirrorsDatabase) -> None:
    store.queue_wakeup("m1", "west", "branch", "main", "post-commit", T0)
    (read,) = store.wakeups("west")
    # two listening ticks read the same wake-up; both try to claim it: one gets it
    first, second = store.claim_wakeups([read], T0), store.claim_wakeups([read], T0)
    assert len(first) == 1 and second == []
    (held,) = store.wakeups("west")
    assert claimed(held, T0 + timedelta(seconds=1))  # the others skip it while the claim holds
    # the tick died: after the lease its claim is taken like a queued token, by one tick only
    later = T0 + CLAIM_LEASE + timedelta(seconds=1)
    assert not claimed(held, later)
    retaken = store.claim_wakeups([held], later)
    assert len(retaken) == 1 and store.claim_wakeups([held], later) == []
    assert store.ack_wakeups(first) == 0  # the dead tick's late ack removes nothing
    assert store.ack_wakeups(retaken) == 1 and store.wakeups("west") == []


def test_a_hook_queued_again_while_claimed_is_served_again(store: MirrorsDatabase) -> None:
    store.queue_wakeup("m1", "west", "branch", "main", "post-commit", T0)
    taken = store.claim_wakeups(store.wakeups("west"), T0)
    store.queue_wakeup("m1", "west", "branch", "main", "post-commit", T0 + timedelta(seconds=1))
    assert store.ack_wakeups(taken) == 0
    (again,) = store.wakeups("west")
    assert not claimed(again, T0 + timedelta(seconds=1))
    assert len(store.claim_wakeups([again], T0 + timedelta(seconds=1))) == 1


def test_only_one_sensor_records_a_run_key_for_a_ref_until_it_is_lost(store: MirrorsDatabase) -> None:
    lost = T0 - LOST_REQUEST
    assert store.request_run("m1", "branch", "main", "m/main/a@0", "hooks_2", T0, lost_before=lost)
    # the full scan, or another listener, finds the same state: the key is taken
    assert not store.request_run("m1", "branch", "main", "m/main/a@0", "commits", T0, lost_before=lost)
    # the same sensor asks again (Dagster skips its own key); another ref or mirror is independent
    assert store.request_run("m1", "branch", "main", "m/main/a@0", "hooks_2", T0, lost_before=lost)
    assert store.request_run("m1", "branch", "dev", "m/dev/a@0", "commits", T0, lost_before=lost)
    assert store.request_run("m2", "branch", "main", "m/main/a@0", "commits", T0, lost_before=lost)
    assert store.request_run("m1", "tag", "*", "m/tags/x@y", "commits", T0, lost_before=lost)
    # a new state of the ref is a new key: whoever sees it first records it
    assert store.request_run("m1", "branch", "main", "m/main/b@0", "commits", T0, lost_before=lost)
    assert not store.request_run("m1", "branch", "main", "m/main/b@0", "hooks_2", T0, lost_before=lost)
    # a record older than the lease (its tick died before Dagster got the request) is taken over
    later = T0 + LOST_REQUEST + timedelta(seconds=1)
    assert store.request_run("m1", "branch", "main", "m/main/b@0", "hooks_2", later, lost_before=later - LOST_REQUEST)
    assert not store.request_run(
        "m1", "branch", "main", "m/main/b@0", "commits", later, lost_before=later - LOST_REQUEST
    )
    with pytest.raises(InvalidMirrorSpec):
        store.request_run("m1", "commit", "main", "k", "commits", T0, lost_before=lost)
