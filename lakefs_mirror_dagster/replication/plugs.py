"""What plugs into a ``MirrorEngine``: the validated-files cache, the range validator, the range transferer and the
ref recorder. Each has an in-process default here or in the engine; the Spark wing and the service supply others."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from ..lakefs import Commit
from ..storage import Blockstore
from .range_changes import RangeReads
from .results import RefKind, RefResult, TransferStats
from .validation import RangeValidation, validate_range

__all__ = [
    "RangeBatch",
    "RangeTransferer",
    "RangeValidator",
    "RefGate",
    "RefRecorder",
    "ValidatedCache",
    "in_process_validator",
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

#: Copies the objects of a batch of new ranges (read at ``commit``) and then writes each range file whose
#: objects all arrived; adds its counts and failures to the stats. In-process (the engine's pool) or Spark tasks.
RangeTransferer = Callable[[RangeBatch, Commit, TransferStats], None]

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
