"""Behaviour of the mirrors database as its users (API, mirrors manager, engine) see it.

Every test runs against a SQLite file and against a real PostgreSQL server (``db_url`` fixture).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from lakefs_mirror_dagster.mirrors import (
    ConcurrentUpdate,
    InvalidMirrorSpec,
    InvalidStateTransition,
    Mirror,
    MirrorExists,
    MirrorNotFound,
    MirrorsDatabase,
    MirrorState,
    MirrorStore,
    NamespaceInUse,
    validation_namespace,
)
from lakefs_mirror_dagster.mirrors.dynamodb import DynamoMirrorStore


def spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "organization_id": "acme",
        "source_region": "us-east-1",
        "source_repository": "sales",
        "name": "sales-mirror",
        "destination_region": "us-west-2",
        "storage_namespace": "s3://west-bucket/sales-mirror",
    }
    base.update(overrides)
    return base


# ---------------------------------------------------------------------------- create / get
def test_created_mirror_reads_back_identically(store: MirrorsDatabase) -> None:
    before = datetime.now(UTC)
    created = store.create_mirror(**spec(storage_id="west"))
    assert created.state is MirrorState.PENDING
    assert created.generation == 1
    assert created.created_at.tzinfo is not None
    assert before - timedelta(seconds=5) <= created.created_at <= datetime.now(UTC) + timedelta(seconds=5)

    by_id = store.get_mirror(created.id)
    by_name = store.get_by_name("us-west-2", "sales-mirror")
    assert by_id == created
    assert by_name == created
    assert by_id.storage_id == "west"
    # The id can name the mirror repository itself: it obeys lakeFS's repository-name rule.
    assert len(created.id) == 26 and created.id.isalnum() and created.id.islower()


def test_mirror_ids_are_unique_and_sort_by_creation(store: MirrorsDatabase) -> None:
    ids = [store.create_mirror(**spec(name=f"m-{i}", storage_namespace=f"s3://b/{i}")).id for i in range(5)]
    assert len(set(ids)) == 5
    listed = [m.id for m in store.list_mirrors().mirrors]
    assert listed == sorted(ids)


def test_unknown_mirror_is_a_clear_not_found(store: MirrorsDatabase) -> None:
    with pytest.raises(MirrorNotFound, match="nope"):
        store.get_mirror("nope")
    with pytest.raises(MirrorNotFound, match="'ghost' in region 'us-west-2'"):
        store.get_by_name("us-west-2", "ghost")


def test_same_name_in_same_region_is_refused_with_the_existing_mirror_named(store: MirrorsDatabase) -> None:
    first = store.create_mirror(**spec())
    with pytest.raises(MirrorExists) as info:
        store.create_mirror(**spec(source_repository="other", storage_namespace="s3://west-bucket/else"))
    assert info.value.existing_id == first.id
    assert "sales-mirror" in str(info.value) and "us-west-2" in str(info.value) and first.id in str(info.value)
    # Nothing half-written: still exactly one mirror.
    assert [m.id for m in store.list_mirrors().mirrors] == [first.id]


def test_same_name_in_another_region_is_fine(store: MirrorsDatabase) -> None:
    store.create_mirror(**spec())
    other = store.create_mirror(**spec(destination_region="eu-central-1"))
    assert store.get_by_name("eu-central-1", "sales-mirror") == other


def test_namespace_used_by_another_mirror_in_the_region_is_refused(store: MirrorsDatabase) -> None:
    first = store.create_mirror(**spec())
    with pytest.raises(NamespaceInUse) as info:
        store.create_mirror(**spec(name="another-name"))
    assert info.value.existing_id == first.id
    assert "s3://west-bucket/sales-mirror" in str(info.value)
    # A different store (multi-storage) or a different region may use the same URI.
    store.create_mirror(**spec(name="on-second-store", storage_id="second"))
    store.create_mirror(**spec(name="in-east", destination_region="eu-central-1"))
    assert len(store.list_mirrors().mirrors) == 3


def test_explicit_mirror_id_collision_is_mirror_exists(store: MirrorsDatabase) -> None:
    store.create_mirror(**spec(mirror_id="fixed-id"))
    with pytest.raises(MirrorExists, match="fixed-id"):
        store.create_mirror(**spec(mirror_id="fixed-id", name="x-other", storage_namespace="s3://b/other"))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "Bad_Name"),
        ("name", "ab"),
        ("source_repository", ""),
        ("storage_namespace", "bucket/no-scheme"),
        ("storage_namespace", "ftp://x/y"),
        ("destination_region", ""),
        ("destination_region", "us west"),
        ("organization_id", None),
        ("storage_id", "has space"),
        ("mirror_id", "UPPER"),
        ("state", "running"),
    ],
)
def test_bad_input_names_the_field(store: MirrorsDatabase, field: str, value: Any) -> None:
    expected = "state" if field == "state" else field
    with pytest.raises(InvalidMirrorSpec, match=expected):
        store.create_mirror(**spec(**{field: value}))
    assert store.list_mirrors().mirrors == []


# ---------------------------------------------------------------------------- listing
def test_listing_pages_through_everything_once_with_filters(store: MirrorsDatabase) -> None:
    made: list[Mirror] = []
    for i in range(7):
        made.append(
            store.create_mirror(
                **spec(
                    name=f"mirror-{i}",
                    source_repository="sales" if i % 2 == 0 else "people",
                    destination_region="us-west-2" if i < 5 else "eu-central-1",
                    storage_namespace=f"s3://b/mirror-{i}",
                )
            )
        )
    pages = []
    after = None
    for _ in range(10):
        page = store.list_mirrors(page_size=3, after=after)
        pages.append([m.name for m in page.mirrors])
        after = page.next_after
        if after is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    assert sorted(name for page in pages for name in page) == sorted(m.name for m in made)

    sales = store.list_mirrors(source_repository="sales").mirrors
    assert {m.name for m in sales} == {"mirror-0", "mirror-2", "mirror-4", "mirror-6"}
    eu = store.list_mirrors(destination_region="eu-central-1").mirrors
    assert {m.name for m in eu} == {"mirror-5", "mirror-6"}

    store.set_state(made[1].id, MirrorState.ACTIVE, "", 1)
    store.set_state(made[2].id, MirrorState.FAILED, "boom", 1)
    active_or_failed = store.list_mirrors(states=[MirrorState.ACTIVE, "failed"]).mirrors
    assert {m.name for m in active_or_failed} == {"mirror-1", "mirror-2"}
    assert [m.name for m in store.iter_mirrors(page_size=2, source_repository="people")] == [
        "mirror-1",
        "mirror-3",
        "mirror-5",
    ]


def test_exact_page_boundary_has_no_dangling_cursor(store: MirrorsDatabase) -> None:
    for i in range(4):
        store.create_mirror(**spec(name=f"mirror-{i}", storage_namespace=f"s3://b/{i}"))
    first = store.list_mirrors(page_size=2)
    second = store.list_mirrors(page_size=2, after=first.next_after)
    assert len(first.mirrors) == 2 and first.next_after == first.mirrors[-1].id
    assert len(second.mirrors) == 2
    # A full last page may still point on; following it must give an empty page and no cursor.
    if second.next_after is not None:
        third = store.list_mirrors(page_size=2, after=second.next_after)
        assert third.mirrors == [] and third.next_after is None
    with pytest.raises(InvalidMirrorSpec, match="page_size"):
        store.list_mirrors(page_size=0)
    with pytest.raises(InvalidMirrorSpec, match="states"):
        store.list_mirrors(states="active")


# ---------------------------------------------------------------------------- state machine
def test_set_state_is_compare_and_set(store: MirrorsDatabase) -> None:
    mirror = store.create_mirror(**spec())
    creating = store.set_state(mirror.id, MirrorState.CREATING, "creating repository", 1)
    assert (creating.state, creating.generation, creating.message) == (
        MirrorState.CREATING,
        2,
        "creating repository",
    )
    assert creating.updated_at >= mirror.updated_at
    assert store.get_mirror(mirror.id) == creating

    with pytest.raises(ConcurrentUpdate) as info:
        store.set_state(mirror.id, MirrorState.ACTIVE, "stale writer", 1)
    assert (info.value.expected, info.value.actual) == (1, 2)
    assert store.get_mirror(mirror.id).state is MirrorState.CREATING  # the loser changed nothing

    active = store.set_state(mirror.id, "active", "", None)  # unconditional, still atomic
    assert (active.state, active.generation) == (MirrorState.ACTIVE, 3)


def test_impossible_transitions_are_refused(store: MirrorsDatabase) -> None:
    mirror = store.create_mirror(**spec())
    deleting = store.set_state(mirror.id, MirrorState.DELETING, "user asked", 1)
    with pytest.raises(InvalidStateTransition, match=r"deleting.*active"):
        store.set_state(mirror.id, MirrorState.ACTIVE, "", deleting.generation)
    deleted = store.set_state(mirror.id, MirrorState.DELETED, "", deleting.generation)
    for state in MirrorState:
        if state is not MirrorState.DELETED:
            with pytest.raises(InvalidStateTransition):
                store.set_state(mirror.id, state, "", deleted.generation)
    # Same state again only refreshes the message.
    again = store.set_state(mirror.id, MirrorState.DELETED, "repository gone", deleted.generation)
    assert again.message == "repository gone" and again.generation == deleted.generation + 1


def test_set_state_on_missing_mirror_and_bad_generation(store: MirrorsDatabase) -> None:
    with pytest.raises(MirrorNotFound):
        store.set_state("missing", MirrorState.ACTIVE, "", None)
    mirror = store.create_mirror(**spec())
    with pytest.raises(InvalidMirrorSpec, match="expected_generation"):
        store.set_state(mirror.id, MirrorState.ACTIVE, "", "1")  # type: ignore[arg-type]


def test_long_messages_are_truncated_not_rejected(store: MirrorsDatabase) -> None:
    mirror = store.create_mirror(**spec())
    updated = store.set_state(mirror.id, MirrorState.FAILED, "x" * 10_000, 1)
    assert len(updated.message) == 4096 and updated.message.endswith("...")
    assert store.get_mirror(mirror.id).message == updated.message


# ---------------------------------------------------------------------------- delete
def test_delete_removes_mirror_branches_and_its_range_cache(store: MirrorsDatabase) -> None:
    mirror = store.create_mirror(**spec())
    other = store.create_mirror(**spec(name="other-mirror", storage_namespace="s3://b/other"))
    store.record_branch(mirror.id, "main", source_commit_id="c1")
    store.mark_ranges_validated(mirror.validation_namespace, {"r1": "f1", "r2": "f2"})
    store.mark_ranges_validated(other.validation_namespace, {"r1": "f1"})

    with pytest.raises(ConcurrentUpdate):
        store.delete_mirror(mirror.id, expected_generation=7)
    assert store.delete_mirror(mirror.id, expected_generation=1) is True
    assert store.delete_mirror(mirror.id) is False
    with pytest.raises(MirrorNotFound):
        store.get_mirror(mirror.id)
    with pytest.raises(MirrorNotFound):
        store.get_branches(mirror.id)
    assert store.validated_count(mirror.validation_namespace) == 0
    assert store.validated_ranges(other.validation_namespace, ["r1"]) == {"r1": "f1"}  # untouched
    # Name and namespace are free again.
    again = store.create_mirror(**spec())
    assert again.id != mirror.id and store.get_branches(again.id) == []


# ---------------------------------------------------------------------------- branches
def test_branch_records_merge_partial_updates(store: MirrorsDatabase) -> None:
    mirror = store.create_mirror(**spec())
    seen_at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    store.record_branch(mirror.id, "main", source_commit_id="a" * 64, source_commit_time=seen_at)
    branch = store.get_branch(mirror.id, "main")
    assert branch is not None and branch.mirrored_commit_id is None and not branch.in_sync

    promoted = datetime(2024, 5, 1, 12, 0, 42, tzinfo=UTC)
    store.record_branch(mirror.id, "main", mirrored_commit_id="a" * 64, promoted_at=promoted, lag_seconds=42)
    branch = store.get_branch(mirror.id, "main")
    assert branch is not None
    assert branch.source_commit_id == "a" * 64 and branch.source_commit_time == seen_at  # kept
    assert branch.promoted_at == promoted and branch.lag_seconds == 42.0 and branch.in_sync

    # Times come back in UTC whatever zone they were given in.
    plus2 = datetime(2024, 5, 1, 18, 0, tzinfo=timezone(timedelta(hours=2)))
    store.record_branch(mirror.id, "dev", source_commit_id="b" * 64, source_commit_time=plus2)
    dev = store.get_branch(mirror.id, "dev")
    assert dev is not None and dev.source_commit_time == datetime(2024, 5, 1, 16, 0, tzinfo=UTC)
    assert dev.source_commit_time.utcoffset() == timedelta(0)

    assert [b.branch for b in store.get_branches(mirror.id)] == ["dev", "main"]
    assert store.delete_branch(mirror.id, "dev") is True
    assert store.delete_branch(mirror.id, "dev") is False
    assert [b.branch for b in store.get_branches(mirror.id)] == ["main"]


def test_branch_of_unknown_mirror_and_bad_values(store: MirrorsDatabase) -> None:
    with pytest.raises(MirrorNotFound):
        store.record_branch("nope", "main", source_commit_id="c")
    mirror = store.create_mirror(**spec())
    with pytest.raises(InvalidMirrorSpec, match="timezone-aware"):
        store.record_branch(mirror.id, "main", promoted_at=datetime(2024, 1, 1))
    with pytest.raises(InvalidMirrorSpec, match="branch"):
        store.record_branch(mirror.id, "", source_commit_id="c")
    with pytest.raises(InvalidMirrorSpec, match="lag_seconds"):
        store.record_branch(mirror.id, "main", lag_seconds="3")  # type: ignore[arg-type]
    assert store.get_branches(mirror.id) == []


# ---------------------------------------------------------------------------- validated ranges
def test_validated_ranges_cache_is_idempotent_and_per_namespace(store: MirrorsDatabase) -> None:
    west = validation_namespace("us-west-2", "", "s3://b/ns")
    east = validation_namespace("eu-central-1", "", "s3://b/ns")  # same URI, other region's storage
    assert west != east
    assert store.mark_ranges_validated(west, {"r1": "1/a", "r2": "2/b", "r3": "3/c"}) == 3
    assert store.mark_ranges_validated(west, {"r2": "2/b", "r3": "3/c", "r4": "4/d"}) == 1
    assert store.validated_ranges(west, ["r1", "r4", "r9"]) == {"r1": "1/a", "r4": "4/d"}
    assert store.validated_ranges(east, ["r1", "r4"]) == {}
    # validated again after its file was rewritten: the new fingerprint replaces the old one
    assert store.mark_ranges_validated(west, {"r1": "1/z"}) == 1
    assert store.validated_ranges(west, ["r1"]) == {"r1": "1/z"}
    assert store.validated_count(west) == 4
    assert store.forget_validated(west, ["r1", "r9"]) == 1
    assert store.validated_ranges(west, ["r1", "r2"]) == {"r2": "2/b"}
    assert store.forget_validated(west) == 3
    assert store.validated_count(west) == 0
    assert store.validated_ranges(west, []) == {}


def test_large_batches_cross_statement_limits(store: MirrorsDatabase) -> None:
    # SQL statements take 500 ids, DynamoDB calls 100: a fifth of the SQL sizes crosses DynamoDB's limit as
    # often (DynamoDB Local writes about a millisecond per item).
    n = 1_400 if isinstance(store, DynamoMirrorStore) else 7_000
    namespace = "us-west-2//s3://b/big"
    ids = [f"{i:064x}" for i in range(n)]
    first, kept = n * 4 // 7, n * 2 // 7
    assert store.mark_ranges_validated(namespace, dict.fromkeys(ids[:first], "f")) == first
    assert store.mark_ranges_validated(namespace, dict.fromkeys(ids, "f")) == n - first
    probe = ids[::3] + [f"{i:064x}" for i in range(10_000, 12_000)]
    assert store.validated_ranges(namespace, iter(probe)) == dict.fromkeys(ids[::3], "f")  # any iterable
    assert store.forget_validated(namespace, ids[: n - kept]) == n - kept
    assert store.validated_count(namespace) == kept


def test_range_ids_are_checked(store: MirrorsDatabase) -> None:
    with pytest.raises(InvalidMirrorSpec, match="fingerprints must map"):
        store.mark_ranges_validated("ns", ["ok"])  # type: ignore[arg-type]
    with pytest.raises(InvalidMirrorSpec, match="not a single string"):
        store.validated_ranges("ns", "abc")
    with pytest.raises(InvalidMirrorSpec, match="range id"):
        store.mark_ranges_validated("ns", {"ok": "f", "": "f"})
    with pytest.raises(InvalidMirrorSpec, match="fingerprint"):
        store.mark_ranges_validated("ns", {"ok": "f", "ok2": 3})  # type: ignore[dict-item]
    with pytest.raises(InvalidMirrorSpec, match="namespace"):
        store.validated_ranges("", ["ok"])
    assert store.validated_count("ns") == 0  # the bad batch wrote nothing


# ---------------------------------------------------------------------------- opening
def test_data_survives_reopening_and_tables_are_created_once(db_url: str) -> None:
    with MirrorStore(db_url) as first:
        mirror = first.create_mirror(**spec())
    with MirrorStore(db_url) as second:  # create_all again on existing tables is a no-op
        assert second.get_mirror(mirror.id) == mirror
        inspector = sa.inspect(second.engine)
        assert {"mirrors", "mirror_branches", "validated_ranges"} <= set(inspector.get_table_names())


def test_a_database_of_an_older_version_gets_the_fingerprint_column(db_url: str) -> None:
    """Ranges validated before fingerprints existed are kept, with an empty fingerprint the engine never
    trusts (so they are checked once more), and new validations record theirs."""
    with MirrorStore(db_url) as store, store.engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE validated_ranges"))
        conn.execute(
            sa.text(
                "CREATE TABLE validated_ranges (namespace VARCHAR(1400) NOT NULL, range_id VARCHAR(128) NOT NULL, "
                "validated_at TIMESTAMP NOT NULL, PRIMARY KEY (namespace, range_id))"
            )
        )
        conn.execute(sa.text("INSERT INTO validated_ranges VALUES ('ns', 'old', CURRENT_TIMESTAMP)"))
    with MirrorStore(db_url) as upgraded:
        assert upgraded.validated_ranges("ns", ["old"]) == {"old": ""}
        assert upgraded.mark_ranges_validated("ns", {"old": "9/e", "new": "3/f"}) == 2
        assert upgraded.validated_ranges("ns", ["old", "new"]) == {"old": "9/e", "new": "3/f"}
    with MirrorStore(db_url) as again:  # the column is added once
        assert again.validated_count("ns") == 2


def test_sqlite_file_uses_wal_and_creates_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "mirrors.db"
    with MirrorStore(f"sqlite:///{path}") as store:
        store.create_mirror(**spec())
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_in_memory_sqlite_works_for_quick_use() -> None:
    with MirrorStore("sqlite://") as store:
        mirror = store.create_mirror(**spec())
        assert store.get_mirror(mirror.id) == mirror


def test_unsupported_or_bad_urls_are_explained() -> None:
    with pytest.raises(InvalidMirrorSpec, match="unsupported mirrors database URL"):
        MirrorStore("mysql://u:secret@localhost/db")
    with pytest.raises(InvalidMirrorSpec, match="invalid mirrors database URL"):
        MirrorStore("not a url")


def test_url_is_masked_for_logging(pg_url: str) -> None:
    with MirrorStore(pg_url) as store:
        assert store.dialect == "postgresql"
        password = sa.engine.make_url(pg_url).password
        assert password and password not in store.url and password not in repr(store)


@pytest.mark.parametrize("scheme", ["postgresql://", "postgres://"])
def test_plain_postgres_urls_use_psycopg(pg_url: str, scheme: str) -> None:
    plain = pg_url.replace("postgresql+psycopg://", scheme)
    with MirrorStore(plain) as store:
        assert store.engine.dialect.driver == "psycopg"
        store.create_mirror(**spec())


def test_url_objects_are_accepted(pg_url: str, tmp_path: Path) -> None:
    with MirrorStore(sa.engine.make_url(pg_url)) as store:
        mirror = store.create_mirror(**spec())
    sqlite_url = sa.engine.URL.create("sqlite+pysqlite", database=str(tmp_path / "m.db"))
    with MirrorStore(sqlite_url) as store:
        assert store.dialect == "sqlite" and store.list_mirrors().mirrors == []
    with MirrorStore(pg_url) as store:
        assert store.get_mirror(mirror.id) == mirror
