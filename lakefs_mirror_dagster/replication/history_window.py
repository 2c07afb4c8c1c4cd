"""A window of a history's writes, validated together: the metaranges ``history.HistoryTransfer`` wrote (with
their new ranges) and not yet validated, checked at the destination in one call of the validator, and marked in
two transactions of the mirrors database (ranges, then metaranges), instead of a validation and marks per commit.

A new range's entries identical to its bases' are counted without a second look, and its bases may be ranges of
earlier commits of the same window: a range is marked only once its bases passed too, and a metarange only once
all its ranges are intact, so what is marked validated never rests on something that failed.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from ..graveler import RangeRef
from ..storage import Blockstore
from .failpoints import failpoint
from .plugs import RangeValidator, ValidatedCache
from .progress import ProgressReporter
from .range_changes import RangeReads
from .results import TransferStats
from .validation import describe_failure, metadata_uri, stored_metarange_lists

__all__ = ["Window", "WindowValidation", "WrittenMetarange"]


@dataclass(frozen=True)
class WrittenMetarange:
    """A metarange the pass wrote: its bytes, the ranges it lists that must be intact for it to be marked
    (``ranges``: those new in it when ``after`` names the metarange it was compared with, whose ranges are
    then all the others, else all of them), and all it lists (``listed``)."""

    metarange_id: str
    data: bytes
    ranges: list[str]
    after: str | None
    listed: list[RangeRef]


@dataclass
class Window:
    """What the pass wrote and has not validated yet, in the order it was written: new ranges (each with its
    bases) and metaranges (with their bytes and the ranges they list)."""

    ranges: dict[str, tuple[str, ...]] = field(default_factory=dict)
    metaranges: list[WrittenMetarange] = field(default_factory=list)
    #: Each metarange's writes, in the same order: the ranges new in it, and its errors and the figures of its
    #: transfer once written.
    writes: list[tuple[list[str], Future[tuple[list[str], TransferStats]]]] = field(default_factory=list)
    #: What the mirrors database answered for files not yet intact: each one's fingerprint, None if not validated.
    looked_up: dict[str, str | None] = field(default_factory=dict)


class WindowValidation:
    """Validates a ``Window`` at the destination (``store`` under ``namespace``) with the validator it is given
    (the engine's, read when called), marking what passed in ``validated`` under ``validation_key``; metarange
    files are checked on ``workers`` threads beside it. ``reads``: the pass's memo of range files, dropped for the
    window's ranges once done."""

    def __init__(
        self,
        *,
        validated: ValidatedCache,
        validation_key: str,
        progress: ProgressReporter,
        reads: RangeReads,
        store: Blockstore,
        namespace: str,
        workers: int,
    ) -> None:
        self.validated = validated
        self.validation_key = validation_key
        self.progress = progress
        self.reads = reads
        self.store = store
        self.namespace = namespace
        self.workers = workers

    def __call__(
        self, window: Window, validator: RangeValidator, stats: TransferStats, intact: set[str], ref: str
    ) -> list[str]:
        """Validate what ``window`` holds at the destination, its new ranges in one call of the validator and its
        metarange files on the validator's threads, then mark what passed: the ranges first (each only once its
        bases passed too, since its entries identical to theirs were taken on trust), then each metarange all of
        whose ranges are intact (``ref``'s progress hears of it). Empties the window."""
        ranges, metaranges, writes = dict(window.ranges), list(window.metaranges), list(window.writes)
        window.ranges.clear()
        window.metaranges.clear()
        window.writes.clear()
        errors: list[str] = []
        failed: set[str] = set()
        unwritten: set[str] = set()  # new ranges of metaranges whose writes failed: neither validated nor marked
        for written, (new_range_ids, write) in zip(metaranges, writes, strict=True):
            write_errors, write_stats = write.result()
            stats.add(write_stats)
            if write_errors:
                errors.extend(write_errors)
                failed.add(written.metarange_id)
                unwritten.update(new_range_ids)
        if failed:
            ranges = {r: b for r, b in ranges.items() if r not in unwritten}
            self.reads.forget(unwritten)
            metaranges = [m for m in metaranges if m.metarange_id not in failed]
        if not metaranges:
            return errors
        self.progress.validation_started(len(ranges), ref=ref)
        try:
            workers = max(1, min(self.workers, len(metaranges)))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="metarange-check") as pool:
                stored = pool.map(self._stored_metarange, metaranges)
                validations = validator(ranges) if ranges else []
                checked = list(stored)
        finally:
            self.progress.validation_done(len(ranges), ref=ref)
            self.reads.forget([*ranges, *(b for bs in ranges.values() for b in bs)])
        stats.ranges_validated += len(validations)
        stats.objects_validated_by_size += sum(v.checked_by_size for v in validations)
        stats.objects_missing += sum(v.missing_count for v in validations)
        passed = {v.range_id: v for v in validations if v.ok}
        good: dict[str, str] = {}
        for range_id, range_bases in ranges.items():  # in the order written: bases written here come first
            if range_id in passed and all(b in intact or b in good for b in range_bases):
                good[range_id] = passed[range_id].fingerprint
        if good:
            self.validated.mark_ranges_validated(self.validation_key, good)
            intact.update(good)
        errors.extend(describe_failure(v) for v in validations if not v.ok)
        marks: dict[str, str] = {}
        for written, fingerprint in zip(metaranges, checked, strict=True):
            after = written.after
            if fingerprint is None:
                errors.append(f"metarange {written.metarange_id} at the destination does not match the source")
            elif all(r in intact for r in written.ranges) and (after is None or after in intact or after in marks):
                marks[written.metarange_id] = fingerprint
        if marks:
            failpoint("before_mark_validated")
            self.validated.mark_ranges_validated(self.validation_key, marks)
            intact.update(marks)
        return errors

    def _stored_metarange(self, written: WrittenMetarange) -> str | None:
        """The fingerprint of the metarange file at the destination when it hashes to its ID and lists the
        ranges ``written`` does (its bytes were written there); None when it does not."""
        stat = self.store.stat(metadata_uri(self.namespace, written.metarange_id))
        if stat is None or not stored_metarange_lists(
            self.store, self.namespace, written.metarange_id, written.listed, written=written.data, stat=stat
        ):
            return None
        return stat.fingerprint
