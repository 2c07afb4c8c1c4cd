"""Range files read ahead come back as a read made then would: same bytes, same errors, bounded in number."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from lakefs_mirror_dagster.replication.read_ahead import RangeReadAhead
from lakefs_mirror_dagster.storage import Blockstore, StorageError


@dataclass
class Source:
    """Counts reads; a read of a range in ``held`` waits until the test lets it go."""

    reads: list[tuple[str, str]] = field(default_factory=list)
    held: dict[str, threading.Event] = field(default_factory=dict)
    failing: set[str] = field(default_factory=set)

    def read_metadata(self, kind: str, file_id: str) -> bytes:
        self.reads.append((kind, file_id))
        if (gate := self.held.get(file_id)) is not None:
            assert gate.wait(10), "the test never let the read go"
        if file_id in self.failing:
            raise StorageError(f"range {file_id} is not readable")
        return f"{kind}:{file_id}".encode()

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        raise AssertionError("not asked here")


def test_a_range_read_ahead_is_read_once_and_handed_over() -> None:
    source = Source()
    ahead = RangeReadAhead(source)
    assert ahead.start("r1")
    assert not ahead.start("r1"), "already on its way"
    assert ahead.read_metadata("range", "r1") == b"range:r1"
    assert source.reads == [("range", "r1")]
    # once handed over it is not kept: asked again, it is read again
    assert ahead.read_metadata("range", "r1") == b"range:r1"
    assert source.reads == [("range", "r1"), ("range", "r1")]


def test_a_read_ahead_that_failed_raises_when_its_file_is_asked_for() -> None:
    source = Source(failing={"bad"})
    ahead = RangeReadAhead(source)
    ahead.start("bad")
    with pytest.raises(StorageError, match="not readable"):
        ahead.read_metadata("range", "bad")


def test_at_most_limit_reads_are_held_and_discard_drops_them() -> None:
    gate = threading.Event()
    source = Source(held={"r1": gate, "r2": gate})
    ahead = RangeReadAhead(source, limit=2)
    assert ahead.start("r1") and ahead.start("r2")
    assert not ahead.start("r3"), "a third read would exceed the limit"
    gate.set()
    assert ahead.read_metadata("range", "r1") == b"range:r1"
    assert ahead.start("r3"), "room again once one was handed over"
    ahead.discard()
    assert ahead.read_metadata("range", "r2") == b"range:r2"  # read again, not from the dropped one
    assert source.reads.count(("range", "r2")) == 2


def test_only_range_files_are_taken_from_reads_ahead() -> None:
    source = Source()
    ahead = RangeReadAhead(source)
    ahead.start("m1")
    assert ahead.read_metadata("meta_range", "m1") == b"meta_range:m1"
    assert ("meta_range", "m1") in source.reads
