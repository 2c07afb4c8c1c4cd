"""Garbage-collection deletions of one mirror, on local blockstores and a SQLite mirrors database, with a clock the
test moves: the grace period is honoured, objects the source still has are never deleted, ``_lakefs/`` is never
touched, objects that come back are un-marked."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakefs_mirror_dagster.mirrors import MirrorStore
from lakefs_mirror_dagster.region import GcResult, GcSettings, mirror_gc_deletions
from lakefs_mirror_dagster.replication import SourceReader
from lakefs_mirror_dagster.storage import Blockstore, LocalBlockstore, ObjectInfo

SRC, DST = "local://src/repo", "local://dst/mirror"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = GcSettings(grace_period=timedelta(hours=24))


class Case:
    """A source namespace and its mirror's on one local store, and the mirror's record in a mirrors database."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = LocalBlockstore(root=tmp_path / "store")
        self.db = MirrorStore(f"sqlite:///{tmp_path / 'mirrors.db'}")
        self.mirror = self.db.create_mirror(
            organization_id="org",
            source_region="east",
            source_repository="repo",
            name="mirror",
            destination_region="west",
            storage_namespace=DST,
        )
        self.key = self.mirror.validation_namespace
        self.source_store: Blockstore = self.store

    def put(self, namespace: str, *addresses: str) -> None:
        for address in addresses:
            self.store.write_bytes(f"{namespace}/{address}", address.encode())

    def both(self, *addresses: str) -> None:
        self.put(SRC, *addresses)
        self.put(DST, *addresses)

    def gc_at_source(self, *addresses: str) -> None:
        for address in addresses:
            self.store.delete(f"{SRC}/{address}")

    def mirror_has(self) -> set[str]:
        return {i.uri.removeprefix(f"{DST}/") for i in self.store.list_prefix(f"{DST}/")}

    def run(self, at: datetime, settings: GcSettings = DAY) -> GcResult:
        result = mirror_gc_deletions(
            mirror_id=self.mirror.id,
            mirror_name="mirror",
            source=SourceReader("repo", SRC, store=self.source_store),
            destination=self.store,
            destination_namespace=DST,
            marks=self.db,
            validated=self.db,
            validation_keys=[self.key],
            settings=settings,
            now=lambda: at,
        )
        assert result.ok, result.error
        return result


@pytest.fixture
def case(tmp_path: Path) -> Iterator[Case]:
    c = Case(tmp_path)
    c.both("_lakefs/range-1", "data/a", "data/b", "data/c")
    yield c
    c.db.close()


def test_an_object_gc_deleted_at_the_source_goes_after_the_grace_period_and_nothing_else(case: Case) -> None:
    case.put(DST, "_lakefs/only-at-mirror")  # metadata is never data, whatever the source has
    case.gc_at_source("data/b")
    before = case.mirror_has()

    first = case.run(T0)
    assert (first.listed, first.missing, first.newly_missing, first.waiting, first.deleted) == (3, 1, 1, 1, 0)
    assert case.mirror_has() == before
    assert case.run(T0 + timedelta(hours=23, minutes=59)).deleted == 0
    assert case.mirror_has() == before

    due = case.run(T0 + timedelta(hours=24))
    assert (due.deleted, due.addresses, due.bytes_deleted) == (1, ["data/b"], len(b"data/b"))
    assert case.mirror_has() == before - {"data/b"}
    assert case.db.missing_count(case.mirror.id) == 0
    assert case.run(T0 + timedelta(hours=48)).missing == 0  # done: nothing more to do


def test_the_grace_period_setting_decides_when(case: Case) -> None:
    case.gc_at_source("data/a")
    case.run(T0)
    an_hour_later = T0 + timedelta(hours=1)
    assert case.run(an_hour_later, DAY).deleted == 0
    assert case.run(an_hour_later, GcSettings(grace_period=timedelta(hours=1))).deleted == 1
    assert "data/a" not in case.mirror_has()


def test_an_object_back_at_the_source_is_unmarked_and_its_grace_period_starts_again(case: Case) -> None:
    case.gc_at_source("data/c")
    case.run(T0)
    case.put(SRC, "data/c")  # back (a restore from a backup, or a listing that missed it)
    assert case.run(T0 + timedelta(hours=1)).unmarked == 1
    case.gc_at_source("data/c")
    assert case.run(T0 + timedelta(hours=2)).newly_missing == 1
    assert case.run(T0 + timedelta(hours=25)).deleted == 0  # 25 h after the first sighting, 23 h after this one
    assert case.run(T0 + timedelta(hours=26)).deleted == 1


class _Hiding(LocalBlockstore):
    """A store whose listing misses some objects it has (a listing glitch): HEAD still finds them."""

    hidden: frozenset[str] = frozenset()

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        return (i for i in super().list_prefix(uri_prefix, start_after=start_after) if i.uri not in self.hidden)


def test_an_object_the_source_still_has_is_never_deleted(case: Case, tmp_path: Path) -> None:
    hiding = _Hiding(root=tmp_path / "store")
    hiding.hidden = frozenset({f"{SRC}/data/a"})
    case.source_store = hiding
    case.run(T0)
    kept = case.run(T0 + timedelta(days=2))
    assert (kept.missing, kept.deleted, kept.back_at_source) == (1, 0, 1)
    assert "data/a" in case.mirror_has()
    assert case.db.missing_count(case.mirror.id) == 0


def test_a_dry_run_lists_what_would_go_and_changes_nothing(case: Case) -> None:
    case.gc_at_source("data/a", "data/c")
    dry = GcSettings(grace_period=timedelta(hours=24), dry_run=True)
    assert case.run(T0, dry).newly_missing == 2
    assert case.db.missing_count(case.mirror.id) == 0  # a dry run starts no grace period
    case.run(T0)
    would = case.run(T0 + timedelta(days=1), dry)
    assert (would.deleted, would.addresses) == (2, ["data/a", "data/c"])
    assert {"data/a", "data/c"} <= case.mirror_has()
    assert case.run(T0 + timedelta(days=1)).addresses == ["data/a", "data/c"]


def test_pages_merge_listings_in_key_order(case: Case) -> None:
    # "data/k-x" sorts before "data/k/y" (as S3 lists them): a merge of listings in another order would misjudge.
    case.both("data/k-x", "data/k/y", "data/k/z", "data/kb")
    case.gc_at_source("data/k/y", "data/kb")
    small = GcSettings(grace_period=timedelta(hours=1), page_size=2)
    case.run(T0, small)
    done = case.run(T0 + timedelta(hours=1), small)
    assert (done.listed, done.deleted, done.addresses) == (7, 2, ["data/k/y", "data/kb"])
    assert case.mirror_has() == {"_lakefs/range-1", "data/a", "data/b", "data/c", "data/k-x", "data/k/z"}


def test_deleting_drops_the_mirrors_validated_ranges(case: Case) -> None:
    case.db.mark_ranges_validated(case.key, {"range-1": "fp"})
    case.run(T0)
    case.run(T0 + timedelta(days=1))  # nothing missing, nothing deleted: the cache stays
    assert case.db.validated_count(case.key) == 1
    case.gc_at_source("data/a")
    case.run(T0 + timedelta(days=2))
    done = case.run(T0 + timedelta(days=3))
    assert done.deleted == 1 and done.validated_forgotten == 1
    assert case.db.validated_count(case.key) == 0


def test_a_source_namespace_without_lakefs_metadata_is_refused(case: Case) -> None:
    case.gc_at_source("_lakefs/range-1")  # a wrong namespace or store looks like one GC emptied
    result = mirror_gc_deletions(
        mirror_id=case.mirror.id,
        mirror_name="mirror",
        source=SourceReader("repo", SRC, store=case.store),
        destination=case.store,
        destination_namespace=DST,
        marks=case.db,
        validated=case.db,
        validation_keys=[case.key],
        settings=GcSettings(grace_period=timedelta(seconds=1)),
    )
    assert result.error is not None and "holds no lakeFS metadata" in result.error
    assert (result.missing, result.deleted, case.db.missing_count(case.mirror.id)) == (0, 0, 0)
