"""The history one ref needs at the destination, transferred and validated: a ref's ``prepare``.

For each metarange of the commits the mirror lacks, in order: its new ranges' objects and range files (the
transferer), the metarange file, then validation at the destination. Nothing here moves a ref or writes a commit
record (``promotion.py``); a history with a failed validation is returned with the error, to be blocked.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..graveler import RangeRef, iter_range_refs, verify_range_file
from ..graveler import commit_id as compute_commit_id
from ..lakefs import Commit
from ..logs import log_fields
from ..storage import ObjectStat, fixed_workers
from .aside import aside
from .errors import ReplicationError
from .failpoints import failpoint
from .in_process import InProcessTransferer
from .planner import CommitPlanner
from .plugs import RangeBatch, RangeTransferer, RangeValidator, SyncingRef, ValidatedCache, ref_label
from .prefetch import MetadataPrefetch
from .progress import ProgressReporter
from .range_transfer import RangeSource, put_metadata_file
from .read_ahead import RangeReadAhead
from .results import RefKind, TransferStats
from .settings import EngineSettings
from .source import RepositorySource
from .validation import MAX_REPORTED, describe_failure, metadata_uri, stored_metarange_lists

__all__ = ["PREFETCH_WORKERS", "HistoryTransfer", "PreparedRef"]

log = logging.getLogger(__name__)

#: Threads reading a history's metadata files ahead (``MetadataPrefetch``): round trips overlapped at once.
PREFETCH_WORKERS = 8


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
    ) -> None:
        self.source = source
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

    def prepare(self, kind: RefKind, name: str, target: str) -> PreparedRef:
        """Transfer and validate everything ``target`` needs at the destination; promotes nothing."""
        commits = self.planner.missing_commits(target)
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
                self.source, order, before=parents, workers=PREFETCH_WORKERS, copy_ahead=ahead
            )
            prefetch.advance(0)
        try:
            parent_ranges = self._parent_ranges(commits) if prefetch is None else parents.result()
            bases = {r.range_id: r for r in parent_ranges}
            for i, (metarange_id, commit) in enumerate(first_commit.items()):
                if prefetch is not None:
                    prefetch.advance(i)
                errors.extend(self._metarange(metarange_id, commit, stats, intact, bases, reader, syncing))
        finally:
            if prefetch is not None:
                prefetch.close()
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
        reader: RangeSource,
        syncing: SyncingRef,
    ) -> list[str]:
        """Copy a metarange's new ranges (objects first) and the metarange, then validate it all. ``bases``
        (ranges of earlier commits by ID, each once however many commits list it) grows by this metarange's
        ranges for the commits after it. ``reader`` reads the source's metadata files (the source itself, or a
        ``MetadataPrefetch`` over it)."""
        data = reader.read_metadata("meta_range", metarange_id)
        refs = reader.range_refs(metarange_id, data) if isinstance(reader, MetadataPrefetch) else None
        if refs is None:
            refs = list(iter_range_refs(verify_range_file(data, metarange_id)))
        range_ids = [ref.range_id for ref in refs]
        cached = self._validated_before([metarange_id, *range_ids], intact)
        ahead = RangeReadAhead(reader) if self.transferer is self.in_process else None
        if ahead is not None:  # never validated here: read from the source while the others' copies are looked at
            for range_id in (r for r in range_ids if r not in cached and r not in intact):
                if not ahead.start(range_id):
                    break
        known = self._intact([metarange_id, *range_ids], intact, stats, cached)
        new_ranges = self._with_bases([r for r in refs if r.range_id not in known], bases, intact, stats)
        for r in refs:
            bases.setdefault(r.range_id, r)
        stats.ranges_skipped += len(range_ids) - len(new_ranges)
        if metarange_id in known and not new_ranges:
            return []
        ref = syncing.label
        try:
            failed_before = stats.failed_object_count
            if new_ranges:
                self.progress.batch_planned((r for r in refs if r.range_id in new_ranges), ref=ref)
                handled_before, bytes_before = stats.objects_handled, stats.bytes_copied
                self.transferer(new_ranges, commit, stats, dataclasses.replace(syncing, ahead=ahead))
                if isinstance(reader, MetadataPrefetch):  # what was copied ahead, the pass found present
                    for range_id in new_ranges:
                        copied, nbytes = reader.copied_ahead.pop(range_id, (0, 0))
                        moved = min(copied, stats.objects_skipped)
                        stats.objects_copied += moved
                        stats.objects_skipped -= moved
                        stats.bytes_copied += nbytes if moved == copied else 0
                self.progress.batch_done(
                    ranges=len(new_ranges),
                    objects=stats.objects_handled - handled_before,
                    copied_bytes=stats.bytes_copied - bytes_before,
                    ref=ref,
                )
            if stats.failed_object_count > failed_before:
                examples = ", ".join(stats.failed_objects[:5])
                return [f"{stats.failed_object_count - failed_before} object(s) could not be copied, e.g. {examples}"]
            keep_present = not self.settings.copy_objects
            if not put_metadata_file(self.dst_store, self.dst_ns, metarange_id, data, keep_present=keep_present):
                stats.metadata_files_present += 1
            failpoint("after_metarange_file")
            self.progress.validation_started(len(new_ranges), ref=ref)
            try:
                return self._validate_metarange(metarange_id, data, range_ids, new_ranges, stats, intact)
            finally:
                self.progress.validation_done(len(new_ranges), ref=ref)
        finally:  # kept for this metarange's validation only, so what a pass holds stays bounded
            self.in_process.reads.forget([*new_ranges, *(b for bs in new_ranges.values() for b in bs)])
            if ahead is not None:
                ahead.discard()

    def _validate_metarange(
        self,
        metarange_id: str,
        data: bytes,
        range_ids: list[str],
        new_ranges: RangeBatch,
        stats: TransferStats,
        intact: set[str],
    ) -> list[str]:
        """Check the metarange file (``data`` were written, and list ``range_ids``) and validate its new ranges at
        the destination; mark what passed."""
        errors: list[str] = []
        metarange_stat = self._stat_metadata(metarange_id)
        lists = metarange_stat is not None and stored_metarange_lists(
            self.dst_store, self.dst_ns, metarange_id, range_ids, written=data
        )
        if not lists:
            errors.append(f"metarange {metarange_id} at the destination does not match the source")
        validations = self.validator(new_ranges) if new_ranges else []
        stats.ranges_validated += len(validations)
        stats.objects_validated_by_size += sum(v.checked_by_size for v in validations)
        stats.objects_missing += sum(v.missing_count for v in validations)
        good = {v.range_id: v.fingerprint for v in validations if v.ok}
        if good:
            self.validated.mark_ranges_validated(self.validation_key, good)
            intact.update(good)
        for v in validations:
            if not v.ok:
                errors.append(describe_failure(v))
        if not errors and metarange_stat is not None:
            failpoint("before_mark_validated")
            self.validated.mark_ranges_validated(self.validation_key, {metarange_id: metarange_stat.fingerprint})
            intact.add(metarange_id)
        return errors

    def _validated_before(self, file_ids: Sequence[str], intact: set[str]) -> Mapping[str, str]:
        """The files among ``file_ids`` not yet found intact in this pass that were validated earlier, each with
        the fingerprint it had then (``_intact`` looks at their copies)."""
        todo = [f for f in dict.fromkeys(file_ids) if f not in intact]
        return self.validated.validated_ranges(self.validation_key, todo) if todo else {}

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

    def _parent_ranges(self, commits: Sequence[Commit]) -> list[RangeRef]:
        """The ranges of the parents already at the mirror: the ones new ranges are most likely rewrites of."""
        in_batch = {c.id for c in commits}
        parents = [p for c in commits for p in c.parents if p not in in_batch]
        metaranges = dict.fromkeys(self.planner.source_commit(p).metarange_id for p in parents)
        refs: list[RangeRef] = []
        for metarange_id in filter(None, metaranges):
            data = self.source.read_metadata("meta_range", metarange_id)
            refs.extend(iter_range_refs(verify_range_file(data, metarange_id)))
        return refs

    def _with_bases(
        self, new: Sequence[RangeRef], bases: Mapping[str, RangeRef], intact: set[str], stats: TransferStats
    ) -> dict[str, tuple[str, ...]]:
        """Each new range with the intact validated ranges whose key spans overlap it."""
        new_ids = {r.range_id for r in new}
        overlapping = {
            r.range_id: [b.range_id for b in bases.values() if b.range_id not in new_ids and _overlap(b, r)]
            for r in new
        }
        usable = self._intact([b for ids in overlapping.values() for b in ids], intact, stats)
        return {rid: tuple(dict.fromkeys(b for b in ids if b in usable)) for rid, ids in overlapping.items()}

    def _stat_metadata(self, file_id: str) -> ObjectStat | None:
        return self.dst_store.stat(metadata_uri(self.dst_ns, file_id))


def _overlap(a: RangeRef, b: RangeRef) -> bool:
    return a.min_key <= b.max_key and b.min_key <= a.max_key


def _verify_commit_id(commit: Commit) -> None:
    computed = compute_commit_id(
        commit.committer,
        commit.message,
        commit.metarange_id,
        commit.creation_date,
        commit.metadata,
        list(commit.parents),
    )
    if computed != commit.id:
        raise ReplicationError(
            f"source commit {commit.id} does not hash to its ID (fields give {computed}); refusing to replicate it"
        )
