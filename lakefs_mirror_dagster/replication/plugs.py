"""What plugs into a ``MirrorEngine``: the validated-files cache, the range validator, the range transferer and the
ref recorder, and the ref a transfer works for (``SyncingRef``). Each plug has an in-process default here or in
``in_process.py``; the Spark wing and the service supply others."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from ..lakefs import Commit
from ..storage import Blockstore, CopyResult, ObjectStat
from .failpoints import failpoint
from .progress import ProgressReporter
from .range_changes import RangeReads
from .read_ahead import RangeReadAhead
from .results import RefKind, RefResult, TransferStats
from .validation import RangeValidation, validate_range

__all__ = [
    "RangeBatch",
    "RangeTransferer",
    "RangeValidator",
    "RefGate",
    "RefRecorder",
    "SyncingRef",
    "ValidatedCache",
    "in_process_validator",
    "ref_label",
]


class ValidatedCache(Protocol):
    """Range and metarange files already validated at a destination, each with the fingerprint its file had
    then (every ``MirrorsDatabase`` implements it)."""

    def validated_ranges(self, namespace: str, range_ids: Iterable[str]) -> Mapping[str, str]: ...

    def mark_ranges_validated(self, namespace: str, fingerprints: Mapping[str, str]) -> int: ...

    def forget_validated(self, namespace: str, range_ids: Iterable[str] | None = None) -> int: ...


#: New range IDs, each with its base ranges: validated ranges at the destination whose keys overlap it (the
#: ranges lakeFS rewrote into it). Entries unchanged from a base need neither a copy nor a second look.
RangeBatch = Mapping[str, Sequence[str]]

#: Validates a batch of ranges at the destination: in-process threads, or Spark tasks.
RangeValidator = Callable[[RangeBatch], list[RangeValidation]]


def ref_label(kind: RefKind, name: str) -> str:
    """``"<kind> <name>"``: how progress names a ref in flight."""
    return f"{kind} {name}"


@dataclass(frozen=True)
class SyncingRef:
    """The ref whose history is being transferred, handed down from where its transfer starts to each batch's
    transferer. Branch workers sync several refs at once, so none of this is kept on the engine."""

    #: ``ref_label``: the ref whose progress the copied objects count towards.
    label: str
    progress: ProgressReporter
    #: The current metarange's range files, some being read ahead already; set only when the engine's own
    #: in-process transfer is its transferer (any other transferer reads them itself).
    ahead: RangeReadAhead | None = None
    #: Objects of the current batch the engine's copy ahead stored already (checked as any copy is), by
    #: destination URI, as the pass would find them; the in-process transfer does not look for them again.
    present: Mapping[str, ObjectStat] = field(default_factory=dict)

    def object_done(self, result: CopyResult) -> None:
        """Each object the copy pool finished for this ref: a failpoint for the fault suite, a tick of progress."""
        failpoint("after_object_copy")
        self.progress.object_done(0 if result.method == "skipped" else result.size, ref=self.label)


#: Copies the objects of a batch of new ranges (read at ``commit``, for the ref being synced) and then writes each
#: range file whose objects all arrived; adds its counts and failures to the stats. In-process (``in_process.py``)
#: or Spark tasks.
RangeTransferer = Callable[[RangeBatch, Commit, TransferStats, SyncingRef], None]

#: Called with every ref result the engine produces (the service records branch states in the mirrors database),
#: whichever caller ran the sync: the CLI's loop, the REST service or a Dagster run.
RefRecorder = Callable[[RefResult], None]

#: Asked before a pass syncs a ref (kind, name, source commit, mirror commit): a result to report instead of
#: syncing it (a blocked branch still in its cooldown, ``retry.py``), or None to sync it.
RefGate = Callable[[RefKind, str, str | None, str | None], RefResult | None]


def in_process_validator(
    store: Blockstore, namespace: str, *, workers: int, strict: bool, reads: RangeReads | None = None
) -> RangeValidator:
    """The default validator: ``validate_range`` on a small thread pool, with the engine's ``reads`` (what its
    transfer read of the same ranges in this pass)."""

    def validate(batch: RangeBatch) -> list[RangeValidation]:
        def one(range_id: str) -> RangeValidation:
            bases = batch[range_id]
            return validate_range(
                store, namespace, range_id, strict_full_addresses=strict, base_ranges=bases, reads=reads
            )

        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="validate") as pool:
            return list(pool.map(one, batch))

    return validate
