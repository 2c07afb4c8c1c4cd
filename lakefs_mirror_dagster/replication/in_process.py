"""The engine's own ``RangeTransferer``: a batch's ranges one after another, their objects on one ``TransferPool``
in this process (in ``transfer.mode: external`` no objects: the range files only), and the copy ahead of
``MetadataPrefetch`` on the same pool. It is built before the rest of its engine, so that the plugs chosen for the
engine (``plug_choice.py``; the Spark wing's) can fall back to it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..lakefs import Commit
from ..storage import Blockstore, CopyResult, InFlightFigures, ObjectStat, TransferPool, process_limiter
from .copy_plan import plan_range_copies
from .errors import ReplicationError
from .failpoints import failpoint
from .plugs import RangeBatch, SyncingRef
from .range_changes import PROCESS_VERIFIED_RANGES, RangeReads, range_changes
from .range_transfer import transfer_range
from .read_ahead import RangeReadAhead
from .results import TransferStats
from .settings import EngineSettings
from .source import RepositorySource

__all__ = ["InProcessTransferer"]


class InProcessTransferer:
    """A ``RangeTransferer`` copying from ``source`` into ``store`` under ``namespace`` in this process.

    ``reads`` (range files read in this pass) is shared with the engine's validation of the same metaranges; their
    blocks stay in the process's memory of verified ranges, the bases of the next pass's rewrites."""

    def __init__(self, source: RepositorySource, store: Blockstore, namespace: str, settings: EngineSettings) -> None:
        self.source = source
        self.store = store
        self.namespace = namespace
        #: Whether objects are copied (``transfer.mode: copy``) or awaited from the store's replication.
        self.copy_objects = settings.copy_objects
        self.reads = RangeReads(verified=PROCESS_VERIFIED_RANGES)
        self._pool = TransferPool(
            concurrency=settings.concurrency,
            max_bytes_in_flight=settings.max_bytes_in_flight,
            limiter=process_limiter(settings.max_bytes_per_second),
        )

    def take_in_flight(self) -> InFlightFigures:
        """The pool's copies in flight since the last call: the most at once, the limit, the reads' round trip."""
        return self._pool.in_flight.take_figures()

    def __call__(self, batch: RangeBatch, commit: Commit, stats: TransferStats, ref: SyncingRef) -> None:
        """Each range of ``batch`` in turn, the next one's file read while one is worked on (from ``ref.ahead``,
        whose reads the engine started, when it has one)."""
        stats.note_path("in_process" if self.copy_objects else "external")
        ahead = ref.ahead or RangeReadAhead(self.source)
        order = list(batch)
        for i, (range_id, base_ranges) in enumerate(batch.items()):
            if i + 1 < len(order):
                ahead.start(order[i + 1])  # the next range's file comes while this one is worked on
            summary = transfer_range(
                ahead,
                self.store,
                self.namespace,
                range_id,
                commit.id,
                self._pool,
                base_ranges=base_ranges,
                copy_objects=self.copy_objects,
                reads=self.reads,
                on_result=ref.object_done,
                present=ref.present,
            )
            summary.add_to(stats)
            if summary.error is not None:
                raise ReplicationError(summary.error)

    def copy_ahead(
        self,
        commits: Sequence[Commit],
        index: int,
        range_id: str,
        data: bytes,
        bases: list[str],
        read: Callable[[str, str], bytes],
    ) -> tuple[int, int, dict[str, ObjectStat]]:
        """``MetadataPrefetch``'s copy ahead: the objects a later commit's new range adds over its parent's
        ranges, copied on this pool while the pass works on earlier commits. Only objects: the range file, the
        metarange, validation and the ref move stay the pass's, in order, so copying ahead changes nothing a ref
        may point at; a copy that fails here is simply made (or reported) by the pass. Progress sees these
        objects when the pass finds them present (bytes then count at their copy, not on screen). Returns the
        objects and bytes copied, and each object that arrived as the pass would find it (``SyncingRef.present``).
        """
        if index == 0:  # the pass is at the first commit already: its copies are the pass's own, with progress
            return 0, 0, {}
        commit = commits[index]
        changes = range_changes(data, range_id, bases, lambda rid: read("range", rid))
        copies = plan_range_copies(
            changes,
            locate=lambda key, address: self.source.object_location(commit.id, key, address),
            destination=self.store,
            destination_namespace=self.namespace,
        )
        recorded = {t.dst_uri: t.etag for t in copies.tasks}
        present: dict[str, ObjectStat] = {}

        def arrived(result: CopyResult) -> None:
            failpoint("after_object_copy")
            present[result.dst_uri] = ObjectStat(size=result.size, etag=recorded[result.dst_uri])

        result = self._pool.run(copies.tasks, copies.destination_stats, on_result=arrived)
        return result.copied, result.bytes_copied, present
