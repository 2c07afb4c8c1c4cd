"""The history one ref needs at the destination, transferred and validated: a ref's ``prepare``.

For each metarange of the commits the mirror lacks, in order: its new ranges' objects and range files (the
transferer), the metarange file; then validation at the destination. Validation and its marks are done for a
window of ``VALIDATION_WINDOW`` metaranges at once (one validator call, one mirrors-database transaction for the
ranges and one for the metaranges), so a long history does not pay them commit by commit. Nothing here moves a
ref or writes a commit record (``promotion.py``); a history with a failed validation is returned with the error,
to be blocked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..graveler import GravelerError, Metarange, RangeRef, SSTableError, decode_metarange
from ..lakefs import Commit, LakeFSError
from ..logs import log_fields
from ..storage import ObjectStat, StorageError, fixed_workers
from .aside import aside
from .errors import ReplicationError
from .failpoints import failpoint
from .history_window import Window, WindowValidation, WrittenMetarange
from .in_process import InProcessTransferer
from .planner import CommitPlanner, id_of_fields
from .plugs import RangeBatch, RangeTransferer, RangeValidator, SyncingRef, ValidatedCache, ref_label
from .prefetch import MetadataPrefetch
from .progress import ProgressReporter
from .range_changes import range_changes
from .range_transfer import RangeSource, content_md5, put_metadata_file
from .read_ahead import RangeReadAhead
from .results import RefKind, TransferStats
from .settings import EngineSettings
from .source import RepositorySource
from .validation import MAX_REPORTED, base_reader, metadata_uri

__all__ = ["PREFETCH_WINDOW", "PREFETCH_WORKERS", "VALIDATION_WINDOW", "HistoryTransfer", "PreparedRef"]

log = logging.getLogger(__name__)

#: Threads reading a history's metadata files ahead (``MetadataPrefetch``): round trips overlapped at once, and
#: how many metaranges ahead of the pass they read (a commit's reads are a few round trips one after another).
PREFETCH_WORKERS = 64
PREFETCH_WINDOW = 128
#: Metaranges transferred before their validation and marks are done together.
VALIDATION_WINDOW = 32
#: Metaranges whose objects, range files and metarange file are written at once (in-process transfer only).
WRITERS = 16
#: Files of metaranges read ahead asked about with a metarange's own (whose files are always all asked about).
LOOK_AHEAD_FILES = 2048
#: Metaranges whose ranges are kept by ID: the parents of the next commits, whose ranges theirs rewrite.
_RECENT_METARANGES = 64


@dataclass
class PreparedRef:
    """A ref whose commits are transferred and validated, ready to promote (or blocked, with why)."""

    kind: RefKind
    name: str
    target: str
    commits: list[Commit]
    stats: TransferStats
    error: str | None = None


class HistoryTransfer:
    """Transfers and validates, for one mirror, what a ref's target commit needs at the destination.

    ``transferer`` and ``validator`` are the engine's plugs; ``in_process`` its own transfer (the destination
    store and namespace, and the range reads shared by transfer and validation). Only when the transferer is
    ``in_process`` are range files read and objects copied ahead of the transfer."""

    def __init__(
        self,
        *,
        source: RepositorySource,
        planner: CommitPlanner,
        in_process: InProcessTransferer,
        transferer: RangeTransferer,
        validator: RangeValidator,
        validated: ValidatedCache,
        validation_key: str,
        settings: EngineSettings,
        progress: ProgressReporter,
        mirror_repo: str,
        planned: Callable[[list[str]], None] | None = None,
    ) -> None:
        """``planned`` hears the IDs of the commits a ref needs, before their transfer starts."""
        self.source = source
        self.planned = planned
        self.planner = planner
        self.in_process = in_process
        self.transferer = transferer
        self.validator = validator
        self.validated = validated
        self.validation_key = validation_key
        self.settings = settings
        self.progress = progress
        self.mirror_repo = mirror_repo
        self.dst_store = in_process.store
        self.dst_ns = in_process.namespace
        self.validate_window = WindowValidation(
            validated=validated,
            validation_key=validation_key,
            progress=progress,
            reads=in_process.reads,
            store=in_process.store,
            namespace=in_process.namespace,
            workers=settings.validator_workers,
        )

    def prepare(self, kind: RefKind, name: str, target: str) -> PreparedRef:
        """Transfer and validate everything ``target`` needs at the destination; promotes nothing."""
        commits = self.planner.missing_commits(target)
        if commits and self.planned is not None:
            self.planned([c.id for c in commits])
        stats = TransferStats(commits=len(commits))
        prepared = PreparedRef(kind, name, target, commits, stats)
        for commit in commits:
            _verify_commit_id(commit)
        first_commit: dict[str, Commit] = {}
        for c in commits:
            if c.metarange_id:
                first_commit.setdefault(c.metarange_id, c)
        stats.metaranges = len(first_commit)
        syncing = SyncingRef(ref_label(kind, name), self.progress)
        intact: set[str] = set()
        errors: list[str] = []
        order = list(first_commit)
        reader: RangeSource = self.source
        prefetch = None
        if order:  # read (and copy) ahead, also the first metarange while the parents' ranges are read
            ahead = None
            if self.settings.copy_objects and self.transferer is self.in_process:
                ahead = functools.partial(self.in_process.copy_ahead, list(first_commit.values()))
            parents = aside(lambda: self._parent_ranges(commits), name="parent-ranges")
            reader = prefetch = MetadataPrefetch(
                self.source,
                order,
                before=parents,
                window=PREFETCH_WINDOW,
                workers=PREFETCH_WORKERS,
                keep=VALIDATION_WINDOW + 2,
                copy_ahead=ahead,
            )
            prefetch.advance(0)
        with contextlib.ExitStack() as closing:
            if prefetch is not None:
                closing.callback(prefetch.close)
            parent_ranges = self._parent_ranges(commits) if prefetch is None else parents.result()
            bases = {r.range_id: r for metarange in parent_ranges.values() for r in metarange.refs}
            recent: OrderedDict[str, Metarange] = OrderedDict(parent_ranges)
            outside = set(parent_ranges)  # the parents' at the mirror: their ranges are looked at, not diffed
            window = Window()
            if self.transferer is self.in_process:  # metaranges written at once; any other transferer, in turn
                writers = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="metarange-writer")
                closing.callback(writers.shutdown, cancel_futures=True)
            else:
                writers = None
            for i, (metarange_id, commit) in enumerate(first_commit.items()):
                if prefetch is not None:
                    prefetch.advance(i)
                errors.extend(
                    self._metarange(
                        metarange_id, commit, stats, intact, bases, recent, outside, reader, syncing, window, writers
                    )
                )
                if len(window.metaranges) >= VALIDATION_WINDOW:
                    errors.extend(self.validate_window(window, self.validator, stats, intact, syncing.label))
            errors.extend(self.validate_window(window, self.validator, stats, intact, syncing.label))
        if errors:
            why = "validation failed" if self.settings.copy_objects else "waiting for the store's replication"
            prepared.error = f"{why}, not promoted: " + "; ".join(errors[:MAX_REPORTED])
        return prepared

    def _metarange(
        self,
        metarange_id: str,
        commit: Commit,
        stats: TransferStats,
        intact: set[str],
        bases: dict[str, RangeRef],
        recent: OrderedDict[str, Metarange],
        outside: set[str],
        reader: RangeSource,
        syncing: SyncingRef,
        window: Window,
        writers: ThreadPoolExecutor | None,
    ) -> list[str]:
        """Copy a metarange's new ranges (objects first) and the metarange into ``window``, to be validated with
        it. When its commit's first parent's metarange was worked on in this pass (and is among the ``recent``
        ones, not ``outside``), only the ranges this one lists that the parent's does not are looked at: the
        parent's were, and this metarange is marked only once the parent's is. ``bases`` (ranges of earlier
        commits by ID, each once however many commits list it) grows by those; a new range's bases are the
        overlapping ranges of its commit's parents, when their metaranges are ``recent`` (else all of
        ``bases``). ``reader`` reads the source's metadata files (the source itself, or a ``MetadataPrefetch``
        over it)."""
        data = reader.read_metadata("meta_range", metarange_id)
        after_id = self.planner.source_commit(commit.parents[0]).metarange_id if commit.parents else ""
        after = recent.get(after_id) if after_id not in outside else None
        metarange = reader.metarange(metarange_id, data) if isinstance(reader, MetadataPrefetch) else None
        if metarange is None:
            metarange = decode_metarange(data, metarange_id, like=after)
        fresh = metarange.changed_from(after) if after is not None else metarange.refs
        parents = self._parents_metaranges(commit, recent)
        recent[metarange_id] = metarange
        while len(recent) > _RECENT_METARANGES:
            recent.popitem(last=False)
        fresh_ids = [ref.range_id for ref in fresh]
        cached = self._validated_before([metarange_id, *fresh_ids], intact, window, reader)
        ahead = RangeReadAhead(reader) if self.transferer is self.in_process else None
        if ahead is not None:  # never validated here: read from the source while the others' copies are looked at
            for range_id in (r for r in fresh_ids if r not in cached and r not in intact and r not in window.ranges):
                if isinstance(reader, MetadataPrefetch) and reader.holds("range", range_id):
                    continue  # on its way already
                if not ahead.start(range_id):
                    break
        known = self._intact([metarange_id, *fresh_ids], intact, stats, cached) | window.ranges.keys()
        new = [r for r in fresh if r.range_id not in known]
        new_ranges = self._with_bases(new, parents, bases, intact, stats, window)
        for r in fresh:
            bases.setdefault(r.range_id, r)
        stats.ranges_skipped += len(metarange.refs) - len(new_ranges)
        if metarange_id in known and not new_ranges:
            return []
        if new_ranges:
            self.progress.batch_planned((r for r in fresh if r.range_id in new_ranges), ref=syncing.label)
        if writers is not None and ahead is not None:
            self._compare_in_order(new_ranges, ahead, reader)
        write = functools.partial(self._write, metarange_id, data, commit, new_ranges, reader, syncing, ahead)
        if writers is None:
            done: Future[tuple[list[str], TransferStats]] = Future()
            done.set_result(write())
        else:
            done = writers.submit(write)
        window.ranges.update(new_ranges)
        window.metaranges.append(
            WrittenMetarange(metarange_id, data, fresh_ids, after_id if after is not None else None, metarange.refs)
        )
        window.writes.append((list(new_ranges), done))
        return []

    def _compare_in_order(self, new_ranges: RangeBatch, ahead: RangeReadAhead, reader: RangeSource) -> None:
        """Each new range compared with its bases now, in the pass's order, its bytes held for its writer: a
        range whose base is a range of an earlier commit still being written finds that base remembered
        (``VerifiedRanges``), not missing at the destination. A range that cannot be read or decoded is left to
        its writer, which reports it as the transfer always did."""
        read_base = base_reader(self.dst_store, self.dst_ns)
        order = list(new_ranges)
        for i, (range_id, range_bases) in enumerate(new_ranges.items()):
            following = order[i + 1] if i + 1 < len(order) else None
            held = following is not None and isinstance(reader, MetadataPrefetch) and reader.holds("range", following)
            if following is not None and not held:
                ahead.start(following)  # the next range's file comes while this one is compared
            try:
                early = reader.early(range_id) if isinstance(reader, MetadataPrefetch) else None
                data = early if early is not None else ahead.read_metadata("range", range_id)
                range_changes(data, range_id, range_bases, read_base, self.in_process.reads)
            except (SSTableError, StorageError, LakeFSError):
                continue
            ahead.hold(range_id, data)

    def _write(
        self,
        metarange_id: str,
        data: bytes,
        commit: Commit,
        new_ranges: RangeBatch,
        reader: RangeSource,
        syncing: SyncingRef,
        ahead: RangeReadAhead | None,
    ) -> tuple[list[str], TransferStats]:
        """A metarange's writes: its new ranges' objects and range files, then the metarange file. Its errors
        (objects that could not be copied: the metarange is then not written) and its transfer's figures."""
        stats = TransferStats()
        ref = syncing.label
        try:
            if new_ranges:
                present: dict[str, ObjectStat] = {}
                if isinstance(reader, MetadataPrefetch):  # its objects copied ahead first, counted as copied
                    for range_id in new_ranges:
                        reader.settle(range_id)
                        present.update(reader.present_ahead.pop(range_id, {}))
                self.transferer(new_ranges, commit, stats, dataclasses.replace(syncing, ahead=ahead, present=present))
                if isinstance(reader, MetadataPrefetch):  # what was copied ahead, the pass found present
                    for range_id in new_ranges:
                        copied, nbytes = reader.copied_ahead.pop(range_id, (0, 0))
                        moved = min(copied, stats.objects_skipped)
                        stats.objects_copied += moved
                        stats.objects_skipped -= moved
                        stats.bytes_copied += nbytes if moved == copied else 0
                self.progress.batch_done(
                    ranges=len(new_ranges), objects=stats.objects_handled, copied_bytes=stats.bytes_copied, ref=ref
                )
            if stats.failed_object_count:
                examples = ", ".join(stats.failed_objects[:5])
                return [f"{stats.failed_object_count} object(s) could not be copied, e.g. {examples}"], stats
            keep_present = not self.settings.copy_objects
            md5 = content_md5(self.dst_store, data)
            if not put_metadata_file(
                self.dst_store, self.dst_ns, metarange_id, data, keep_present=keep_present, md5=md5
            ):
                stats.metadata_files_present += 1
            failpoint("after_metarange_file")
            return [], stats
        finally:
            if ahead is not None:
                ahead.discard()

    def _validated_before(
        self,
        file_ids: Sequence[str],
        intact: set[str],
        window: Window | None = None,
        reader: RangeSource | None = None,
    ) -> Mapping[str, str]:
        """The files among ``file_ids`` not yet found intact (nor written, in ``window``) in this pass that were
        validated earlier, each with the fingerprint it had then (``_intact`` looks at their copies). With a
        ``MetadataPrefetch`` as ``reader``, the files of the metaranges it has read ahead are asked about in the
        same question (``window.looked_up`` keeps the answers), so a history costs the mirrors database one
        question per window of commits, not one per commit."""
        written = window.ranges if window is not None else {}
        todo = [f for f in dict.fromkeys(file_ids) if f not in intact and f not in written]
        if window is None or not todo:
            return self.validated.validated_ranges(self.validation_key, todo) if todo else {}
        unknown = [f for f in todo if f not in window.looked_up]
        if unknown:
            if isinstance(reader, MetadataPrefetch):  # and, in the same question, at most as many files ahead
                ahead = (f for mid, refs in reader.new_ranges().items() for f in (mid, *(r.range_id for r in refs)))
                later = (f for f in ahead if f not in intact and f not in written and f not in window.looked_up)
                unknown.extend(itertools.islice(later, LOOK_AHEAD_FILES))
            unknown = list(dict.fromkeys(unknown))
            found = self.validated.validated_ranges(self.validation_key, unknown)
            window.looked_up.update({f: found.get(f) for f in unknown})
        return {f: fp for f in todo if (fp := window.looked_up.get(f)) is not None}

    def _intact(
        self, file_ids: Sequence[str], intact: set[str], stats: TransferStats, cached: Mapping[str, str] | None = None
    ) -> set[str]:
        """The files among ``file_ids`` validated earlier whose copies at the destination still have the
        fingerprint they had then. Validations of files changed or gone since are forgotten, so those files
        are copied and checked again: a damaged range never stays trusted. ``intact`` carries what this
        pass already found, so files shared by many commits are looked at once; ``cached`` is
        ``_validated_before`` of the same files, when the caller already asked."""
        if cached is None:
            cached = self._validated_before(file_ids, intact)
        if cached:
            ids = list(cached)
            with ThreadPoolExecutor(max_workers=min(fixed_workers(self.settings.concurrency), len(ids))) as pool:
                found = dict(zip(ids, pool.map(self._stat_metadata, ids), strict=True))
            changed = [f for f in ids if (st := found[f]) is None or not cached[f] or st.fingerprint != cached[f]]
            if changed:
                log.warning(
                    "%d validated file(s) of %s changed or went missing at the destination since they were "
                    "validated (or were validated by an older version); checking them again: %s",
                    len(changed),
                    self.mirror_repo,
                    ", ".join(changed[:5]),
                    extra=log_fields(mirror=self.mirror_repo, repository=self.source.repository),
                )
                stats.files_changed_since_validation += len(changed)
                self.validated.forget_validated(self.validation_key, changed)
            intact.update(set(ids).difference(changed))
        return {f for f in file_ids if f in intact}

    def _parent_ranges(self, commits: Sequence[Commit]) -> dict[str, Metarange]:
        """The metaranges of the parents already at the mirror: their ranges are the ones new ranges are most
        likely rewrites of."""
        in_batch = {c.id for c in commits}
        parents = [p for c in commits for p in c.parents if p not in in_batch]
        metaranges = dict.fromkeys(self.planner.source_commit(p).metarange_id for p in parents)
        return {metarange_id: self._mirrored_metarange(metarange_id) for metarange_id in filter(None, metaranges)}

    def _mirrored_metarange(self, metarange_id: str) -> Metarange:
        """A metarange of a commit at the mirror, read from the destination's own store (no round trip to the
        source: an incremental's parent), checked against its ID like any; read from the source when the
        destination's copy is missing or does not check out."""
        try:
            data = self.dst_store.read_bytes(metadata_uri(self.dst_ns, metarange_id))
            return decode_metarange(data, metarange_id)
        except (StorageError, GravelerError) as exc:
            log.info("metarange %s of %s read from the source: %s", metarange_id, self.mirror_repo, exc)
        return decode_metarange(self.source.read_metadata("meta_range", metarange_id), metarange_id)

    def _parents_metaranges(self, commit: Commit, recent: OrderedDict[str, Metarange]) -> list[Metarange] | None:
        """The metaranges of ``commit``'s parents when each is among the ``recent`` ones (those of the parents
        outside the history, and the last ones the pass worked on), else None."""
        found: list[Metarange] = []
        for parent in commit.parents:
            metarange = recent.get(self.planner.source_commit(parent).metarange_id)
            if metarange is None:
                return None
            found.append(metarange)
        return found

    def _with_bases(
        self,
        new: Sequence[RangeRef],
        parents: Sequence[Metarange] | None,
        bases: Mapping[str, RangeRef],
        intact: set[str],
        stats: TransferStats,
        window: Window,
    ) -> dict[str, tuple[str, ...]]:
        """Each new range with the ranges whose key spans overlap it, among its commit's ``parents``' (found by
        bisection) or, without them, among all ``bases``, that are intact validated ranges or were written in
        this ``window`` (validated with it, and marked only after them)."""
        new_ids = {r.range_id for r in new}
        if parents is not None:
            overlapping = {
                r.range_id: [b.range_id for p in parents for b in p.overlapping(r) if b.range_id not in new_ids]
                for r in new
            }
        else:
            pool = list(bases.values()) if new else []
            overlapping = {
                r.range_id: [b.range_id for b in pool if b.range_id not in new_ids and _overlap(b, r)] for r in new
            }
        asked = [b for ids in overlapping.values() for b in ids if b not in window.ranges]
        usable = self._intact(asked, intact, stats) | window.ranges.keys()
        return {rid: tuple(dict.fromkeys(b for b in ids if b in usable)) for rid, ids in overlapping.items()}

    def _stat_metadata(self, file_id: str) -> ObjectStat | None:
        return self.dst_store.stat(metadata_uri(self.dst_ns, file_id))


def _overlap(a: RangeRef, b: RangeRef) -> bool:
    return a.min_key <= b.max_key and b.min_key <= a.max_key


def _verify_commit_id(commit: Commit) -> None:
    computed = id_of_fields(commit)
    if computed != commit.id:
        raise ReplicationError(
            f"source commit {commit.id} does not hash to its ID (fields give {computed}); refusing to replicate it"
        )
