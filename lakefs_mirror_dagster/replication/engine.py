"""The mirroring engine for one mirror: plan, transfer, validate, promote. No Dagster in here.

Order of writes at the destination, each step idempotent so a crash anywhere is repaired by running again:
objects -> range file -> metarange file -> validation -> commit records (parents first) -> ref move.
A ref only ever moves to a commit whose metarange, ranges and objects were validated at the destination,
and a commit record is only created when its fields hash to its ID.

``transfer.mode: external`` (``EngineSettings.copy_objects=False``) runs the same flow without the object copies:
the store's own replication delivers the objects to the same relative keys under the mirror's namespace, the
range and metarange files are put (unless replicated too), and validation decides. A commit whose objects have
not all arrived is blocked as ``missing``, so the retry schedule checks it again after ``cooldown_on_missing``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..graveler import CommitData, GravelerError, RangeRef, iter_range_refs, verify_range_file
from ..graveler import commit_id as compute_commit_id
from ..lakefs import Commit, LakeFSClient, LakeFSError, LakeFSNotFound
from ..logs import log_fields
from ..storage import (
    DEFAULT_MAX_BYTES_IN_FLIGHT,
    Blockstore,
    CopyResult,
    ObjectStat,
    StorageError,
    TransferPool,
    process_limiter,
)
from .aside import aside
from .branch_workers import bounded_map, serialized, serialized_recorder, sync_branches
from .copy_plan import plan_range_copies
from .errors import ReplicationError
from .failpoints import failpoint
from .heads import branch_head, branch_heads, differing, tag_commits
from .in_flight import InFlightRecorder, InFlightStore
from .namespaces import is_mirror_repository
from .planner import CommitPlanner
from .plugs import (
    RangeBatch,
    RangeTransferer,
    RangeValidator,
    RefGate,
    RefRecorder,
    ValidatedCache,
    in_process_validator,
)
from .prefetch import MetadataPrefetch
from .progress import ProgressReporter
from .range_changes import PROCESS_VERIFIED_RANGES, RangeReads, range_changes
from .range_transfer import RangeSource, put_metadata_file, transfer_range
from .read_ahead import RangeReadAhead
from .refstore import Refstore, SourceCommitTimes, commit_data
from .results import BlockReason, MirrorSyncResult, RefAction, RefKind, RefResult, TransferStats
from .source import RepositorySource
from .validation import MAX_REPORTED, describe_failure, metadata_uri, read_metarange

__all__ = [
    "EngineSettings",
    "MirrorEngine",
    "MirrorRefMoved",
    "RangeBatch",
    "RangeTransferer",
    "RangeValidator",
    "RefRecorder",
    "ReplicationError",
    "ValidatedCache",
    "in_process_validator",
]

log = logging.getLogger(__name__)
#: Named branches up to this many have their heads read one by one (two calls each) instead of both sides listed.
_HEAD_READS_MAX = 10


#: Threads reading a history's metadata files ahead (``MetadataPrefetch``): round trips overlapped at once.
PREFETCH_WORKERS = 8

#: Commit records written to the refstore database in one transaction: a history's records cost a round trip
#: per batch, not per commit (lakeFS's ``CreateCommitRecord`` takes one record a request).
COMMIT_RECORD_BATCH = 500


class MirrorRefMoved(ReplicationError):
    """The mirror ref moved between reading it and promoting: a concurrent sync or run got there first."""


@dataclass(frozen=True)
class EngineSettings:
    """The config's knobs as the engine reads them (``ReplicationService.engine_settings`` builds them)."""

    concurrency: int = 16
    max_bytes_in_flight: int = DEFAULT_MAX_BYTES_IN_FLIGHT
    max_bytes_per_second: int = 0  # object bytes streamed per second by the whole process (0: no limit)
    strict_full_addresses: bool = False
    list_page_size: int = 1000
    validator_workers: int = 3
    mirror_tags: bool = True
    #: False for ``transfer.mode: external``: objects arrive by the store's replication; only metadata is put.
    copy_objects: bool = True
    log_page_size: int = 1000  # commits per page of the source log the planner reads
    branch_workers: int = 1  # branches of one pass synced at once (branch_workers.py)


@dataclass
class PreparedRef:
    """A ref whose commits are transferred and validated, ready to promote (or blocked, with why)."""

    kind: RefKind
    name: str
    target: str
    commits: list[Commit]
    stats: TransferStats
    error: str | None = None


class MirrorEngine:
    """Replicates one source repository into one read-only mirror repository."""

    def __init__(
        self,
        *,
        source: RepositorySource,
        destination: LakeFSClient,
        mirror_repo: str,
        destination_store: Blockstore,
        destination_namespace: str,
        validated: ValidatedCache,
        validation_key: str | None = None,
        settings: EngineSettings | None = None,
        validator: RangeValidator | None = None,
        transferer: RangeTransferer | None = None,
        destination_storage_id: str = "",
        recorder: RefRecorder | None = None,
        in_flight: InFlightStore | None = None,
        mirror_id: str = "",
        refstore: Refstore | None = None,
        started: RefRecorder | None = None,
    ) -> None:
        self.source = source
        #: Where commit records are written with the source's sub-second times (None: lakeFS's API, whole seconds).
        self.refstore = refstore
        self.commit_times = SourceCommitTimes(source.client, source.repository, source.read_metadata)
        #: The branch workers' and the in-flight writer's calls to the mirrors database never overlap.
        lock = threading.Lock()
        self.validated, self.recorder = serialized(validated, recorder, lock)
        #: Told of each branch about to be advanced, with its source commit's time (``_note_started``).
        self.started = serialized_recorder(started, lock)
        self.dst_storage_id = destination_storage_id
        self.destination = destination
        self.mirror_repo = mirror_repo
        self.dst_store = destination_store
        self.dst_ns = destination_namespace
        self.validation_key = validation_key or destination_namespace
        self.settings = settings or EngineSettings()
        #: Range files read in this pass, shared by the transfer and the validation of a metarange; their blocks
        #: stay in the process's memory of verified ranges, the bases of the next pass's rewrites.
        self.range_reads = RangeReads(verified=PROCESS_VERIFIED_RANGES)
        self.validator = validator or in_process_validator(
            destination_store,
            destination_namespace,
            workers=self.settings.validator_workers,
            strict=self.settings.strict_full_addresses,
            reads=self.range_reads,
        )
        self.transferer: RangeTransferer = transferer or self.transfer_ranges
        self.planner = CommitPlanner(
            source.client, source.repository, destination, mirror_repo, log_page_size=self.settings.log_page_size
        )
        self.progress = ProgressReporter(mirror_repo)  # callers listen (the CLI's display, a Dagster run's log)
        if in_flight is not None:  # the refs in flight in the mirrors database, for the API and ``status``
            InFlightRecorder(in_flight, mirror_id, self.progress, lock=lock)
        self._pool = TransferPool(
            concurrency=self.settings.concurrency,
            max_bytes_in_flight=self.settings.max_bytes_in_flight,
            limiter=process_limiter(self.settings.max_bytes_per_second),
        )
        #: The ref this thread is advancing (``"<kind> <name>"``), whose progress its objects count towards.
        self._syncing = threading.local()

    # ------------------------------------------------------------------ destination repository
    def ensure_mirror_repository(self) -> None:
        """Create the read-only, bare mirror repository if missing; refuse one that is not a mirror of ours."""
        try:
            existing = self.destination.get_repository(self.mirror_repo)
        except LakeFSNotFound:  # the source is read only to create it: a round trip across the link saved a pass
            source_repo = self.source.client.get_repository(self.source.repository)
            self.destination.create_repository(
                self.mirror_repo,
                self.dst_ns,
                default_branch=source_repo.default_branch,
                read_only=True,
                bare=True,
                storage_id=self.dst_storage_id,
            )
            return
        if not is_mirror_repository(existing, self.dst_ns):
            raise ReplicationError(
                f"repository {self.mirror_repo} already exists at {self.destination.endpoint} "
                f"(namespace {existing.storage_namespace}, read_only={existing.read_only}) and is not this mirror"
            )

    # ------------------------------------------------------------------ whole mirror
    def sync(
        self, *, branches: Iterable[str] | None = None, gate: RefGate | None = None, tags: bool | None = None
    ) -> MirrorSyncResult:
        """One pass over every branch (or the named ones) and, unless disabled, every tag (``tags``: whether
        the tags too; by default only when no branches are named). A branch ``gate`` answers for (the retry
        schedule's cooldown) is reported as the gate says instead of being synced."""
        started = time.monotonic()
        result = MirrorSyncResult(mirror=self.mirror_repo, source_repository=self.source.repository)
        self.ensure_mirror_repository()
        heads = self._branch_heads(None if branches is None else set(branches))
        alone = self._newest_moving(heads)
        result.refs.extend(sync_branches(heads, self.sync_ref, gate, self.settings.branch_workers, alone=alone))
        if self.settings.mirror_tags and (branches is None if tags is None else tags):
            result.refs.extend(self._sync_differing_tags())
        result.duration_seconds = time.monotonic() - started
        return result

    def _newest_moving(self, heads: Mapping[str, tuple[str | None, str | None]]) -> str | None:
        """Of the branches whose source head differs from the mirror's, the one whose head has the highest
        generation, when there are several heads (``sync_branches`` syncs it first, by itself). The heads'
        commits are read on the branch workers' threads and kept: each ref's own pass needs them anyway."""
        moving = {n: src for n, (src, dst) in heads.items() if src is not None and src != dst}
        distinct = sorted(set(moving.values()))
        if len(distinct) < 2 or self.settings.branch_workers <= 1:
            return None
        try:
            commits = bounded_map(self.planner.source_commit, distinct, self.settings.branch_workers)
        except (LakeFSError, ReplicationError) as exc:  # only an order: each ref's own pass reports its errors
            log.debug("reading the heads of %s to order its branches: %s", self.mirror_repo, exc)
            return None
        generation = {c.id: c.generation for c in commits}
        return max(sorted(moving), key=lambda n: generation[moving[n]])

    def ref_heads(
        self, *, branches: Iterable[str] | None = None, tags: bool | None = None
    ) -> list[tuple[RefKind, str, str | None, str | None]]:
        """(kind, name, source commit, mirror commit) of every ref ``sync`` with these arguments would look at,
        read from lakeFS and changing nothing (a mirror repository not created yet has no refs): what a dry
        run reports. A ref whose two commits differ is one ``sync`` moves (or deletes, without a source)."""
        heads = self._branch_heads(None if branches is None else set(branches), mirror_missing_ok=True)
        found = [(RefKind.BRANCH, n, src, dst) for n, (src, dst) in heads.items()]
        if self.settings.mirror_tags and (branches is None if tags is None else tags):
            src_tags, dst_tags = self.tags()
            found += [(RefKind.TAG, n, src_tags.get(n), dst_tags.get(n)) for n in sorted(src_tags.keys() | dst_tags)]
        return found

    def _branch_heads(
        self, named: set[str] | None, *, mirror_missing_ok: bool = False
    ) -> dict[str, tuple[str | None, str | None]]:
        """Name -> (source head, mirror head) of every branch on either side, or of the ``named`` ones that
        exist on either. A few named branches (a hook's, a retry's) are read one by one rather than listed,
        so their pass costs the same in a repository of ten branches or of ten thousand."""
        if named is not None and len(named) <= _HEAD_READS_MAX:
            read = {
                n: (
                    branch_head(self.source.client, self.source.repository, n),
                    branch_head(self.destination, self.mirror_repo, n),
                )
                for n in sorted(named)
            }
            return {n: h for n, h in read.items() if h != (None, None)}
        page = self.settings.list_page_size
        src_branches = branch_heads(self.source.client, self.source.repository, page_size=page)
        dst_branches = branch_heads(self.destination, self.mirror_repo, page_size=page, missing_ok=mirror_missing_ok)
        everything = src_branches.keys() | dst_branches.keys()
        names = sorted(everything if named is None else everything & named)
        return {n: (src_branches.get(n), dst_branches.get(n)) for n in names}

    def tags(self) -> tuple[dict[str, str], dict[str, str]]:
        """Tag name -> commit ID at the source and at the mirror (empty for a mirror not created yet)."""
        page = self.settings.list_page_size
        src = tag_commits(self.source.client, self.source.repository, page_size=page)
        return src, tag_commits(self.destination, self.mirror_repo, page_size=page, missing_ok=True)

    def sync_tags(self) -> list[RefResult]:
        """Every tag that differs between source and mirror created, moved or deleted (each after the same
        transfer and validation a branch gets); tags already equal are not listed."""
        self.ensure_mirror_repository()
        return self._sync_differing_tags()

    def _sync_differing_tags(self) -> list[RefResult]:
        src, dst = self.tags()
        names = differing(src, dst)
        return [self.sync_ref(RefKind.TAG, name, src.get(name), dst.get(name)) for name in names]

    def sync_branch(self, branch: str) -> RefResult:
        """Bring one mirror branch to its source head (or delete it when the source branch is gone)."""
        self.ensure_mirror_repository()
        source_head = branch_head(self.source.client, self.source.repository, branch)
        mirror_head = branch_head(self.destination, self.mirror_repo, branch)
        return self.sync_ref(RefKind.BRANCH, branch, source_head, mirror_head)

    # ------------------------------------------------------------------ one ref
    def sync_ref(self, kind: RefKind, name: str, source_commit: str | None, mirror_commit: str | None) -> RefResult:
        """The one ref flow every caller runs: plan -> transfer -> validate -> promote (refused if the mirror
        ref moved since ``mirror_commit`` was read) -> record. Never raises for a failure of this ref: the
        result is ``blocked`` with the error, and the mirror ref stays where it was."""
        started = time.monotonic()
        kind = RefKind(kind)
        label = f"{kind} {name}"
        result = RefResult(kind, name, source_commit, mirror_commit, mirror_commit, action=RefAction.UNCHANGED)
        try:
            if source_commit is None:
                if mirror_commit is not None:
                    self._delete_ref(kind, name)
                    result.mirror_commit, result.action = None, RefAction.DELETED
            elif source_commit != mirror_commit:
                self.progress.ref_started(label, source_commit=source_commit)
                self._syncing.ref = label
                self._note_started(result)
                prepared = self.prepare(kind, name, source_commit)
                result.stats = prepared.stats
                if prepared.error is not None:
                    result.action, result.error = RefAction.BLOCKED, prepared.error
                    result.blocked_by = BlockReason.MISSING
                else:
                    result.action = self.promote(prepared, mirror_commit)
                    result.mirror_commit = source_commit
            self.note_lag(result)
        except Exception as exc:
            log.exception("syncing %s %s of %s failed", kind, name, self.mirror_repo, extra=self._fields(result))
            result.action, result.error = RefAction.BLOCKED, f"{type(exc).__name__}: {exc}"
            result.blocked_by = BlockReason.ERROR
            with contextlib.suppress(Exception):  # how far behind it is (unless the source is what failed)
                self.note_lag(result)
        else:  # one record per ref that moved (or could not: blocked, with why)
            if result.action != RefAction.UNCHANGED:
                level = logging.WARNING if result.error else logging.INFO
                outcome = result.error or result.action
                log.log(level, "%s %s of %s: %s", kind, name, self.mirror_repo, outcome, extra=self._fields(result))
        result.duration_seconds = time.monotonic() - started
        if self.recorder is not None:
            self.recorder(result)
        if source_commit is not None and source_commit != mirror_commit:
            self._syncing.ref = None
            self.progress.ref_finished(label)
        return result

    def _object_done(self, result: CopyResult, *, ref: str | None) -> None:
        """Each object the copy pool finished for ``ref``: a failpoint for the fault suite, a tick of progress."""
        failpoint("after_object_copy")
        self.progress.object_done(0 if result.method == "skipped" else result.size, ref=ref)

    def _fields(self, ref: RefResult | None = None) -> dict[str, str]:
        """The context of this mirror's log records (and of one ref's: its branch and source commit)."""
        branch = ref.name if ref is not None and ref.kind == RefKind.BRANCH else None
        commit = ref.source_commit if ref is not None else None
        return log_fields(mirror=self.mirror_repo, repository=self.source.repository, branch=branch, commit=commit)

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
        intact: set[str] = set()
        errors: list[str] = []
        order = list(first_commit)
        reader: RangeSource = self.source
        prefetch = None
        if order:  # read (and copy) ahead, also the first metarange while the parents' ranges are read
            ahead = None
            if self.copy_objects and self.transferer == self.transfer_ranges:
                commits_of = list(first_commit.values())
                ahead = functools.partial(self._copy_ahead, commits_of)
            parents = aside(lambda: self._parent_ranges(commits), name="parent-ranges")
            reader = prefetch = MetadataPrefetch(
                self.source, order, before=parents, workers=PREFETCH_WORKERS, copy_ahead=ahead
            )
            prefetch.advance(0)
        try:
            bases = self._parent_ranges(commits) if prefetch is None else list(parents.result())
            for i, (metarange_id, commit) in enumerate(first_commit.items()):
                if prefetch is not None:
                    prefetch.advance(i)
                errors.extend(self._transfer_and_validate_metarange(metarange_id, commit, stats, intact, bases, reader))
        finally:
            if prefetch is not None:
                prefetch.close()
        if errors:
            why = "validation failed" if self.settings.copy_objects else "waiting for the store's replication"
            prepared.error = f"{why}, not promoted: " + "; ".join(errors[:MAX_REPORTED])
        return prepared

    def _note_started(self, result: RefResult) -> None:
        """Tell ``started`` which source head a branch is being advanced to and that commit's time, before the copy:
        ``status`` and the metrics then show the branch behind while it is copied (as the Dagster sensor records
        a head it found), not only once it is promoted or blocked. A failure to tell is logged; the sync goes on."""
        if self.started is None or result.kind != RefKind.BRANCH or result.source_commit is None:
            return
        try:
            seen = dataclasses.replace(result)
            self.note_lag(seen)
            self.started(seen)
        except Exception as exc:
            log.warning("could not record %s's new source head: %s: %s", result.name, type(exc).__name__, exc)

    def _copy_ahead(
        self,
        commits: Sequence[Commit],
        index: int,
        range_id: str,
        data: bytes,
        bases: list[str],
        read: Callable[[str, str], bytes],
    ) -> tuple[int, int]:
        """``MetadataPrefetch``'s copy ahead: the objects a later commit's new range adds over its parent's
        ranges, copied on the engine's pool while the pass works on earlier commits. Only objects: the range
        file, the metarange, validation and the ref move stay the pass's, in order, so copying ahead changes
        nothing a ref may point at; a copy that fails here is simply made (or reported) by the pass. Progress
        sees these objects when the pass finds them present (bytes then count at their copy, not on screen)."""
        if index == 0:  # the pass is at the first commit already: its copies are the pass's own, with progress
            return 0, 0
        commit = commits[index]
        changes = range_changes(data, range_id, bases, lambda rid: read("range", rid))
        copies = plan_range_copies(
            changes,
            locate=lambda key, address: self.source.object_location(commit.id, key, address),
            destination=self.dst_store,
            destination_namespace=self.dst_ns,
        )
        result = self._pool.run(copies.tasks, copies.destination_stats, on_result=_copied_ahead)
        return result.copied, result.bytes_copied

    def note_lag(self, result: RefResult) -> None:
        """Set the source commit's time (also for a ref left behind it: how far behind it is, ``status``) and, for
        a ref that just moved there, the lag since that commit."""
        if result.source_commit is None:
            return
        commit = self.planner.source_commit(result.source_commit)
        result.source_commit_time = commit.creation_date
        if result.mirror_commit == result.source_commit and result.action != RefAction.UNCHANGED:
            result.lag_seconds = max(0.0, time.time() - commit.creation_date)

    def promote(self, prepared: PreparedRef, mirror_commit: str | None) -> RefAction:
        """Create the commit records parents first, then point the ref at the target; returns the action
        (``created``, ``advanced`` or ``reset``). Refuses (MirrorRefMoved) when the mirror ref no longer
        points where it did when the caller read it: another run or process moved it meanwhile."""
        if prepared.error is not None:
            raise ReplicationError(f"refusing to promote {prepared.kind} {prepared.name}: {prepared.error}")
        now = self._mirror_ref(prepared.kind, prepared.name)
        if now != mirror_commit:
            raise MirrorRefMoved(
                f"mirror {prepared.kind} {self.mirror_repo}/{prepared.name} moved from {mirror_commit} to {now} "
                "while this sync validated; not promoting over it (the next pass syncs the new state)"
            )
        self._create_commit_records(prepared.commits)
        self.planner.mark_present(c.id for c in prepared.commits)
        failpoint("before_ref_move")
        if prepared.kind == RefKind.BRANCH:
            if mirror_commit is None:
                self.destination.create_branch(self.mirror_repo, prepared.name, prepared.target, force=True)
            else:
                self.destination.hard_reset_branch(self.mirror_repo, prepared.name, prepared.target, force=True)
        else:
            if mirror_commit is not None:
                self.destination.delete_tag(self.mirror_repo, prepared.name, force=True)
            self.destination.create_tag(self.mirror_repo, prepared.name, prepared.target, force=True)
        if mirror_commit is None:
            return RefAction.CREATED
        return RefAction.ADVANCED if self.planner.is_ancestor(mirror_commit, prepared.target) else RefAction.RESET

    def _create_commit_records(self, commits: Sequence[Commit]) -> None:
        """Parents first: through the refstore database with the source's sub-second times when configured
        and reachable (the mirror's log then lists same-second commits in the source's order), else through
        lakeFS's ``CreateCommitRecord`` (whole seconds)."""
        records = None
        if self.refstore is not None and commits:
            try:
                self.refstore.partition(self.mirror_repo)  # the database answers, before the source's dump
                records = self._exact_records(commits)
            except (ReplicationError, LakeFSError, GravelerError, StorageError) as exc:
                log.warning(
                    "commit records of %s go through lakeFS's API (whole seconds; log order of same-second "
                    "commits may differ): %s",
                    self.mirror_repo,
                    exc,
                )
                records = None
        if records is not None:
            assert self.refstore is not None
            for start in range(0, len(records), COMMIT_RECORD_BATCH):  # parents first, one transaction a batch
                self.refstore.write_commits(self.mirror_repo, records[start : start + COMMIT_RECORD_BATCH])
                failpoint("after_commit_record")
            return
        for commit in commits:
            self.destination.create_commit_record(self.mirror_repo, commit, force=True)
            failpoint("after_commit_record")

    def _exact_records(self, commits: Sequence[Commit]) -> list[CommitData]:
        """The records of ``commits`` with the source's nanoseconds, from its refs dump: every commit's, since
        a commit made within the second of one on another branch may meet it in a log only later."""
        nanos = self.commit_times.nanos(c.id for c in commits)
        return [commit_data(c, nanos[c.id]) for c in commits]

    # ------------------------------------------------------------------ internals
    def _mirror_ref(self, kind: RefKind, name: str) -> str | None:
        if kind == RefKind.BRANCH:
            return branch_head(self.destination, self.mirror_repo, name)
        try:
            return self.destination.get_tag(self.mirror_repo, name)
        except LakeFSNotFound:
            return None

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
            with ThreadPoolExecutor(max_workers=min(self.settings.concurrency, len(ids))) as pool:
                found = dict(zip(ids, pool.map(self._stat_metadata, ids), strict=True))
            changed = [f for f in ids if (st := found[f]) is None or not cached[f] or st.fingerprint != cached[f]]
            if changed:
                log.warning(
                    "%d validated file(s) of %s changed or went missing at the destination since they were "
                    "validated (or were validated by an older version); checking them again: %s",
                    len(changed),
                    self.mirror_repo,
                    ", ".join(changed[:5]),
                    extra=self._fields(),
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
        self, new: Sequence[RangeRef], bases: Sequence[RangeRef], intact: set[str], stats: TransferStats
    ) -> dict[str, tuple[str, ...]]:
        """Each new range with the intact validated ranges whose key spans overlap it."""
        new_ids = {r.range_id for r in new}
        overlapping = {
            r.range_id: [b.range_id for b in bases if b.range_id not in new_ids and _overlap(b, r)] for r in new
        }
        usable = self._intact([b for ids in overlapping.values() for b in ids], intact, stats)
        return {rid: tuple(dict.fromkeys(b for b in ids if b in usable)) for rid, ids in overlapping.items()}

    def _stat_metadata(self, file_id: str) -> ObjectStat | None:
        return self.dst_store.stat(metadata_uri(self.dst_ns, file_id))

    def _transfer_and_validate_metarange(
        self,
        metarange_id: str,
        commit: Commit,
        stats: TransferStats,
        intact: set[str],
        bases: list[RangeRef],
        reader: RangeSource | None = None,
    ) -> list[str]:
        """Copy a metarange's new ranges (objects first) and the metarange, then validate it all. ``bases``
        (ranges of earlier commits) grows by this metarange's ranges for the commits after it. ``reader`` reads
        the source's metadata files (the source itself, or a ``MetadataPrefetch`` over it)."""
        reader = reader or self.source
        data = reader.read_metadata("meta_range", metarange_id)
        refs = list(iter_range_refs(verify_range_file(data, metarange_id)))
        range_ids = [ref.range_id for ref in refs]
        cached = self._validated_before([metarange_id, *range_ids], intact)
        ahead = self._syncing.ahead = RangeReadAhead(reader) if self.transferer == self.transfer_ranges else None
        if ahead is not None:  # never validated here: read from the source while the others' copies are looked at
            for range_id in (r for r in range_ids if r not in cached and r not in intact):
                if not ahead.start(range_id):
                    break
        known = self._intact([metarange_id, *range_ids], intact, stats, cached)
        new_ranges = self._with_bases([r for r in refs if r.range_id not in known], bases, intact, stats)
        bases.extend(refs)
        stats.ranges_skipped += len(range_ids) - len(new_ranges)
        if metarange_id in known and not new_ranges:
            self._syncing.ahead = None
            return []
        try:
            failed_before = stats.failed_object_count
            ref = getattr(self._syncing, "ref", None)
            if new_ranges:
                self.progress.batch_planned((r for r in refs if r.range_id in new_ranges), ref=ref)
                handled_before, bytes_before = stats.objects_handled, stats.bytes_copied
                self.transferer(new_ranges, commit, stats)
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
            keep_present = not self.copy_objects
            if not put_metadata_file(self.dst_store, self.dst_ns, metarange_id, data, keep_present=keep_present):
                stats.metadata_files_present += 1
            failpoint("after_metarange_file")
            self.progress.validation_started(len(new_ranges), ref=ref)
            try:
                return self._validate_metarange(metarange_id, range_ids, new_ranges, stats, intact)
            finally:
                self.progress.validation_done(len(new_ranges), ref=ref)
        finally:  # kept for this metarange's validation only, so what a pass holds stays bounded
            self.range_reads.forget([*new_ranges, *(b for bs in new_ranges.values() for b in bs)])
            if ahead is not None:
                ahead.discard()
            self._syncing.ahead = None

    def _validate_metarange(
        self, metarange_id: str, range_ids: list[str], new_ranges: RangeBatch, stats: TransferStats, intact: set[str]
    ) -> list[str]:
        """Check the metarange file and validate its new ranges at the destination; mark what passed."""
        errors: list[str] = []
        metarange_stat = self._stat_metadata(metarange_id)
        if metarange_stat is None or read_metarange(self.dst_store, self.dst_ns, metarange_id) != range_ids:
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

    @property
    def copy_objects(self) -> bool:
        """Whether this engine copies objects (``transfer.mode: copy``) or awaits the store's replication."""
        return self.settings.copy_objects

    def transfer_ranges(self, batch: RangeBatch, commit: Commit, stats: TransferStats) -> None:
        """The in-process ``RangeTransferer``: ranges one after another, objects on the engine's pool (in
        external mode no objects: the range files only)."""
        stats.note_path("in_process" if self.copy_objects else "external")
        on_result = functools.partial(self._object_done, ref=getattr(self._syncing, "ref", None))
        ahead: RangeReadAhead = getattr(self._syncing, "ahead", None) or RangeReadAhead(self.source)
        order = list(batch)
        for i, (range_id, base_ranges) in enumerate(batch.items()):
            if i + 1 < len(order):
                ahead.start(order[i + 1])  # the next range's file comes while this one is worked on
            summary = transfer_range(
                ahead,
                self.dst_store,
                self.dst_ns,
                range_id,
                commit.id,
                self._pool,
                base_ranges=base_ranges,
                copy_objects=self.copy_objects,
                reads=self.range_reads,
                on_result=on_result,
            )
            summary.add_to(stats)
            if summary.error is not None:
                raise ReplicationError(summary.error)

    def _delete_ref(self, kind: RefKind, name: str) -> None:
        if kind == RefKind.BRANCH:
            self.destination.delete_branch(self.mirror_repo, name, force=True)
        else:
            self.destination.delete_tag(self.mirror_repo, name, force=True)


def _copied_ahead(_result: CopyResult) -> None:
    failpoint("after_object_copy")


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
