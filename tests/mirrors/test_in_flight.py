"""The refs in flight on SQLite, PostgreSQL and DynamoDB: a record is overwritten at each write, read back as
written, removed when the ref is done, refused when bad or for an unknown mirror, and goes with its mirror."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from lakefs_mirror_dagster.mirrors import InvalidMirrorSpec, MirrorNotFound, MirrorsDatabase, MirrorStore, RefInFlight
from lakefs_mirror_dagster.mirrors.sql.schema import refs_in_flight

from .conftest import mirror_id_in

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _record(mirror_id: str, **overrides: object) -> RefInFlight:
    fields: dict[str, object] = {
        "mirror_id": mirror_id,
        "kind": "branch",
        "ref": "main",
        "source_commit_id": "c" * 64,
        "started_at": T0,
        "updated_at": T0,
        "ranges_planned": 3,
        "objects_planned": 5_000_000_000,  # past 32 bits: counts of a huge backfill
        "bytes_done": 10**13,
        **overrides,
    }
    return RefInFlight(**fields)  # type: ignore[arg-type]


def test_a_record_is_overwritten_read_back_and_cleared(store: MirrorsDatabase) -> None:
    mid, other = mirror_id_in(store), mirror_id_in(store, "other")
    assert store.refs_in_flight(mid) == []
    store.put_in_flight(_record(mid))
    later = _record(mid, updated_at=T0 + timedelta(seconds=5), ranges_done=1, objects_done=7, bytes_done=2 * 10**13)
    store.put_in_flight(later)
    tag = _record(mid, kind="tag", ref="v1.0")
    store.put_in_flight(tag)
    store.put_in_flight(_record(other))
    assert store.refs_in_flight(mid) == [later, tag]  # by kind, then ref; the second write replaced the first
    assert store.clear_in_flight(mid, "branch", "main")
    assert not store.clear_in_flight(mid, "branch", "main")
    assert store.refs_in_flight(mid) == [tag]
    assert [r.mirror_id for r in store.refs_in_flight(other)] == [other]


def test_bad_records_and_unknown_mirrors_are_refused_and_change_nothing(store: MirrorsDatabase) -> None:
    mid = mirror_id_in(store)
    for bad, message in [
        (_record(mid, kind="commit"), "ref kind"),
        (_record(mid, ref=""), "invalid branch name"),
        (_record(mid, source_commit_id=""), "source_commit_id"),
        (_record(mid, updated_at=datetime(2026, 1, 1)), "timezone-aware"),
        (_record(mid, objects_done=-1), "objects_done"),
        (_record(mid, bytes_done=1.5), "bytes_done"),
    ]:
        with pytest.raises(InvalidMirrorSpec, match=message):
            store.put_in_flight(bad)
    with pytest.raises(MirrorNotFound):
        store.put_in_flight(_record("no-such-mirror"))
    assert store.refs_in_flight(mid) == []


def test_records_go_with_their_mirror(store: MirrorsDatabase) -> None:
    mid = mirror_id_in(store)
    store.put_in_flight(_record(mid))
    assert store.delete_mirror(mid)
    assert store.refs_in_flight(mid) == []
    with pytest.raises(MirrorNotFound):
        store.put_in_flight(_record(mid))


def test_a_database_of_an_older_version_gets_the_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with MirrorStore(url) as old:
        mid = mirror_id_in(old)
    engine = create_engine(url)
    with engine.begin() as conn:
        refs_in_flight.drop(conn)  # as a version before this table left it
    assert refs_in_flight.name not in inspect(engine).get_table_names()
    engine.dispose()
    with MirrorStore(url) as upgraded:
        upgraded.put_in_flight(_record(mid))
        assert upgraded.refs_in_flight(mid) == [_record(mid)]
