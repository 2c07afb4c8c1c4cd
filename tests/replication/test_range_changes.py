"""A rewritten range costs its changed entries: transfer and validation on local stores, no lakeFS needed."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakefs_mirror_dagster.replication import RangeReads, metadata_uri, transfer_range, validate_range
from lakefs_mirror_dagster.replication.range_changes import VerifiedRanges
from lakefs_mirror_dagster.storage import Blockstore, LocalBlockstore, ObjectStat, TransferPool, join_namespace
from tests.graveler.sstable_writer import encode_entry, write_lakefs_file

SRC, DST = "local://src", "local://dst"
BASE_OBJECTS = 200


@dataclass
class Source:
    """A ``RangeSource`` reading range files and objects from a local namespace."""

    store: Blockstore

    def read_metadata(self, kind: str, file_id: str) -> bytes:
        return self.store.read_bytes(metadata_uri(SRC, file_id))

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        return self.store, join_namespace(SRC, address)


@dataclass
class Rewrite:
    store: LocalBlockstore
    base_id: str
    new_id: str
    new_addresses: tuple[str, ...]


def _record(store: LocalBlockstore, key: str, address: str) -> tuple[bytes, bytes, bytes]:
    body = f"{key} at {address}".encode()
    store.write_bytes(join_namespace(SRC, address), body)
    return key.encode(), bytes(32), encode_entry(address, len(body), address_type=1)


@pytest.fixture
def rewrite(tmp_path: Path) -> Iterator[Rewrite]:
    """A base range validated at the destination (file and objects there) and the range lakeFS rewrote it
    into: one key inserted, one entry pointing at a new object; both new objects only at the source."""
    store = LocalBlockstore(root=tmp_path)
    base_records = [_record(store, f"k/{i:04d}", f"data/o{i:04d}") for i in range(0, 2 * BASE_OBJECTS, 2)]
    for _key, _identity, data in base_records:
        address = data[2 : 2 + data[1]].decode()
        store.write_bytes(join_namespace(DST, address), store.read_bytes(join_namespace(SRC, address)))
    new_records = sorted([*base_records, _record(store, "k/0101", "data/inserted")])
    new_records[50] = _record(store, new_records[50][0].decode(), "data/rewritten")
    base, new = write_lakefs_file(base_records), write_lakefs_file(new_records)
    for ns, lf in ((SRC, base), (DST, base), (SRC, new)):
        store.write_bytes(metadata_uri(ns, lf.range_id), lf.data)
    yield Rewrite(store, base.range_id, new.range_id, ("data/inserted", "data/rewritten"))


def _transfer(rw: Rewrite, reads: RangeReads | None, bases: tuple[str, ...] | None = None):  # type: ignore[no-untyped-def]
    return transfer_range(
        Source(rw.store),
        rw.store,
        DST,
        rw.new_id,
        "commit",
        TransferPool(concurrency=2),
        base_ranges=(rw.base_id,) if bases is None else bases,
        reads=reads,
    )


def _reads_of(store: LocalBlockstore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    original = store.read_bytes

    def spy(uri: str) -> bytes:
        reads.append(uri)
        return original(uri)

    monkeypatch.setattr(store, "read_bytes", spy)
    return reads


@pytest.mark.parametrize("shared", [True, False], ids=["one pass's reads", "separate (Spark tasks)"])
def test_only_the_changed_entries_are_copied_and_checked(
    rewrite: Rewrite, shared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = RangeReads() if shared else None
    summary = _transfer(rewrite, reads)
    assert summary.error is None and summary.range_written
    assert (summary.objects, summary.copied, summary.skipped, summary.unchanged) == (201, 2, 0, 199)

    file_reads = _reads_of(rewrite.store, monkeypatch)
    v = validate_range(rewrite.store, DST, rewrite.new_id, base_ranges=(rewrite.base_id,), reads=reads)
    assert v.ok and v.objects == 201 and v.checked_by_size == 2
    new_file, base_file = metadata_uri(DST, rewrite.new_id), metadata_uri(DST, rewrite.base_id)
    # validation reads the new range at the destination; the base only when the transfer's reads are not at hand
    assert file_reads == ([new_file] if shared else [new_file, base_file])


def test_validation_reusing_the_transfer_still_checks_every_changed_object(rewrite: Rewrite) -> None:
    reads = RangeReads()
    assert _transfer(rewrite, reads).copied == 2
    rewrite.store.delete(join_namespace(DST, "data/inserted"))
    v = validate_range(rewrite.store, DST, rewrite.new_id, base_ranges=(rewrite.base_id,), reads=reads)
    assert not v.ok and v.missing_count == 1 and "data/inserted" in v.missing[0]


def test_a_range_file_at_the_destination_unlike_the_one_transferred_is_hashed_again(rewrite: Rewrite) -> None:
    reads = RangeReads()
    assert _transfer(rewrite, reads).range_written
    other = write_lakefs_file([(b"k/x", bytes(32), encode_entry("data/x", 1, address_type=1))])
    rewrite.store.write_bytes(metadata_uri(DST, rewrite.new_id), other.data)  # a valid range, under a wrong name
    v = validate_range(rewrite.store, DST, rewrite.new_id, base_ranges=(rewrite.base_id,), reads=reads)
    assert not v.ok and "not to the expected ID" in (v.error or "")


def test_a_base_that_does_not_hash_to_its_id_makes_every_entry_work(rewrite: Rewrite) -> None:
    rewrite.store.write_bytes(metadata_uri(DST, rewrite.base_id), b"not a range file")
    summary = _transfer(rewrite, RangeReads())
    assert (summary.copied, summary.skipped, summary.unchanged) == (2, 199, 0), "the 199 looked at, found present"


def test_what_a_pass_keeps_is_bounded_and_its_changes_dropped_by_range(rewrite: Rewrite) -> None:
    nothing = RangeReads(budget_bytes=0)
    assert _transfer(rewrite, nothing).unchanged == 199  # same result, nothing kept
    assert nothing.used_bytes == 0 and nothing.verified.used_bytes == 0

    reads = RangeReads()
    _transfer(rewrite, reads)
    assert reads.used_bytes > 0
    reads.forget([rewrite.new_id, rewrite.base_id])
    assert reads.used_bytes == 0
    # the verified blocks stay: the range just written is the base of its next rewrite
    assert reads.verified.get(rewrite.new_id) is not None and reads.verified.get(rewrite.base_id) is not None


def test_the_next_pass_compares_with_what_an_earlier_pass_verified_without_reading_it(
    rewrite: Rewrite, monkeypatch: pytest.MonkeyPatch
) -> None:
    verified = VerifiedRanges(64 << 20)
    assert _transfer(rewrite, RangeReads(verified=verified)).unchanged == 199
    rewrite.store.delete(metadata_uri(DST, rewrite.new_id))  # as if the destination lost the new range file

    file_reads = _reads_of(rewrite.store, monkeypatch)
    again = _transfer(rewrite, RangeReads(verified=verified))
    assert again.error is None and again.range_written and (again.copied, again.unchanged) == (0, 199)
    assert metadata_uri(DST, rewrite.base_id) not in file_reads, "the base was read again"


@dataclass(frozen=True)
class _Sized:
    """Stands in for a ``VerifiedRange``: all the memory of verified ranges looks at is its cost."""

    cost: int


def test_verified_ranges_forget_the_least_recently_used_first() -> None:
    verified = VerifiedRanges(budget_bytes=3000)
    for name in ("a", "b", "c"):
        verified.keep(name, _Sized(1000))  # type: ignore[arg-type]
    assert verified.get("a") is not None  # now the most recently used
    verified.keep("d", _Sized(1000))  # type: ignore[arg-type]
    assert verified.get("b") is None, "b was the least recently used"
    assert all(verified.get(n) is not None for n in ("a", "c", "d"))
    verified.keep("huge", _Sized(10_000))  # type: ignore[arg-type]  # over the whole budget: not kept, none dropped
    assert verified.get("huge") is None and verified.get("a") is not None
    assert verified.used_bytes <= verified.budget_bytes


class _Md5AnsweringStore(LocalBlockstore):
    """A local store whose stat answers, as S3's does for a single PUT, with the MD5 of what it holds."""

    def answers_md5(self, size: int) -> bool:
        return True

    def stat(self, uri: str) -> ObjectStat | None:
        stat = super().stat(uri)
        if stat is None:
            return None
        return dataclasses.replace(stat, etag=hashlib.md5(super().read_bytes(uri)).hexdigest())


@pytest.fixture
def answering(rewrite: Rewrite, tmp_path: Path) -> Rewrite:
    return dataclasses.replace(rewrite, store=_Md5AnsweringStore(root=tmp_path))


def test_a_range_file_whose_etag_is_the_md5_of_what_the_transfer_stored_is_not_read_back(
    answering: Rewrite, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = RangeReads()
    assert _transfer(answering, reads).range_written
    file_reads = _reads_of(answering.store, monkeypatch)
    v = validate_range(answering.store, DST, answering.new_id, base_ranges=(answering.base_id,), reads=reads)
    assert v.ok and v.objects == 201 and v.checked_by_size == 2
    assert metadata_uri(DST, answering.new_id) not in file_reads


def test_a_range_file_changed_after_the_transfer_stored_it_is_read_and_hashed_again(answering: Rewrite) -> None:
    reads = RangeReads()
    assert _transfer(answering, reads).range_written
    other = write_lakefs_file([(b"k/x", bytes(32), encode_entry("data/x", 1, address_type=1))])
    answering.store.write_bytes(metadata_uri(DST, answering.new_id), other.data)  # its MD5 is not the stored one
    v = validate_range(answering.store, DST, answering.new_id, base_ranges=(answering.base_id,), reads=reads)
    assert not v.ok and "not to the expected ID" in (v.error or "")
