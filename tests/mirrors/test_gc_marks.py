"""The garbage-collection marks on SQLite, PostgreSQL and DynamoDB: a first sighting is kept across passes, a
complete pass sweeps what it no longer saw missing, and the marks go with their mirror."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lakefs_mirror_dagster.mirrors import InvalidMirrorSpec, MirrorsDatabase

from .conftest import mirror_id_in

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_first_sighting_is_kept_and_a_complete_pass_sweeps_the_rest(store: MirrorsDatabase) -> None:
    mid = mirror_id_in(store)
    assert store.note_missing(mid, ["data/a", "data/b"], T0) == {"data/a": T0, "data/b": T0}
    later = T0 + timedelta(hours=1)
    assert store.note_missing(mid, ["data/a", "data/c"], later) == {"data/a": T0, "data/c": later}
    assert store.missing_since(mid, ["data/a", "data/x"]) == {"data/a": T0}
    assert store.sweep_missing(mid, later) == 1  # data/b was not seen missing by the pass that started at `later`
    assert store.forget_missing(mid, ["data/c"]) == 1
    assert store.missing_count(mid) == 1
    assert store.delete_mirror(mid)
    assert store.missing_count(mid) == 0


def test_bad_input_is_refused_and_changes_nothing(store: MirrorsDatabase) -> None:
    mid = mirror_id_in(store)
    with pytest.raises(InvalidMirrorSpec, match="timezone-aware"):
        store.note_missing(mid, ["data/a"], datetime(2026, 1, 1))
    with pytest.raises(InvalidMirrorSpec, match="relative address"):
        store.note_missing(mid, ["data/a", "x" * 1025], T0)
    with pytest.raises(InvalidMirrorSpec, match="not a single string"):
        store.forget_missing(mid, "data/a")
    assert store.missing_count(mid) == 0
