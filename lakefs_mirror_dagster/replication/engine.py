"""The mirroring engine for one mirror: plan, transfer, validate, promote. No Dagster in here.

Order of writes at the destination, each step idempotent so a crash anywhere is repaired by running again:
objects -> range file -> metarange file -> validation -> commit records (parents first) -> ref move.
A ref only ever moves to a commit whose metarange, ranges and objects were validated at the destination,
and a commit record is only created when its fields hash to its ID.

``transfer.mode: external`` (``EngineSettings.copy_objects=False``) runs the same flow without the object copies:
the store's own replication delivers the objects to the same relative keys under the mirror's namespace, the
range and metarange files are put (unless replicated too), and validation decides. A commit whose objects have
not all arrived is blocked as ``missing``, so the retry schedule checks it again after ``cooldown_on_missing``.

The engine runs the passes and each ref's flow; its parts do the work: ``heads.MirrorHeads`` reads both sides'
refs, ``history.HistoryTransfer`` transfers and validates a ref's commits (with the transferer and validator
chosen when the engine is built, ``plug_choice.py``; by default ``in_process.py``), ``promotion.Promoter`` writes
the commit records and moves the ref.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from ..lakefs import LakeFSClient, LakeFSError, LakeFSNotFound
from ..logs import log_fields
from ..storage import Blockstore
from .branch_workers import bounded_map, serialized, serialized_recorder, sync_branches
from .errors import ReplicationError
from .heads import MirrorHeads, branch_head, differing
from .history import HistoryTransfer, PreparedRef
from .in_flight import InFlightRecorder, InFlightStore
from .in_process import InProcessTransferer
from .namespaces import is_mirror_repository
from .planner import CommitPlanner
from .plug_choice import Plugs
from .plugs import RefGate, RefRecorder, ValidatedCache, in_process_validator, ref_label
from .progress import ProgressReporter
from .promotion import Promoter
from .refstore import Refstore, SourceCommitTimes
from .results import BlockReason, MirrorSyncResult, RefAction, RefKind, RefResult
from .settings import EngineSettings
from .source import RepositorySource

__all__ = ["MirrorEngine"]

log = logging.getLogger(__name__)


class MirrorEngine:
    """Replicates one source repository into one read-only mirror repository.

    Its transfer and validation plugs are chosen when it is built: ``plugs`` is given the engine's own
    in-process transfer (which a chosen transferer may fall back to) and returns what to use instead of it and
    of the in-process validator (``plug_choice.py``)."""

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
        plugs: Callable[[InProcessTransferer], Plugs] | None = None,
        destination_storage_id: str = "",
        recorder: RefRecorder | None = None,
        in_flight: InFlightStore | None = None,
        mirror_id: str = "",
        refstore: Refstore | None = None,
        started: RefRecorder | None = None,
        known_commit_times: Mapping[str, int] | None = None,
    ) -> None:
        self.source = source
        #: The branch workers' and the in-flight writer's calls to the mirrors database never overlap.
        lock = threading.Lock()
        serialized_validated, self.recorder = serialized(validated, recorder, lock)
        #: Told of each branch about to be advanced, with its source commit's time (``_note_started``).
        self.started = serialized_recorder(started, lock)
        self.dst_storage_id = destination_storage_id
        self.destination = destination
        self.mirror_repo = mirror_repo
        self.dst_ns = destination_namespace
        self.settings = settings or EngineSettings()
        self.in_process = InProcessTransferer(source, destination_store, destination_namespace, self.settings)
        chosen = plugs(self.in_process) if plugs is not None else Plugs()
        #: ``known_commit_times``: source commit ID -> creation time the caller holds (its branch records' heads),
        #: so a ref whose head did not move costs the source no read of its commit.
        self.planner = CommitPlanner(
            source.client,
            source.repository,
            destination,
            mirror_repo,
            log_page_size=self.settings.log_page_size,
            known_times=known_commit_times,
        )
        self.progress = ProgressReporter(mirror_repo)  # callers listen (the CLI's display, a Dagster run's log)
        if in_flight is not None:  # the refs in flight in the mirrors database, for the API and ``status``
            InFlightRecorder(in_flight, mirror_id, self.progress, lock=lock)
        self.heads = MirrorHeads(
            source.client, source.repository, destination, mirror_repo, page_size=self.settings.list_page_size
        )
        validator = chosen.validator or in_process_validator(
            destination_store,
            destination_namespace,
            workers=self.settings.validator_workers,
            strict=self.settings.strict_full_addresses,
            reads=self.in_process.reads,
        )
        commit_times = SourceCommitTimes(source.client, source.repository, source.read_metadata)
        self.history = HistoryTransfer(
            source=source,
            planner=self.planner,
            in_process=self.in_process,
            transferer=chosen.transferer or self.in_process,
            validator=validator,
            validated=serialized_validated,
            validation_key=validation_key or destination_namespace,
            settings=self.settings,
            progress=self.progress,
            mirror_repo=mirror_repo,
            planned=commit_times.ahead if refstore is not None else None,
        )
        self.promoter = Promoter(
            destination=destination,
            mirror_repo=mirror_repo,
            heads=self.heads,
            planner=self.planner,
            commit_times=commit_times,
            refstore=refstore,
        )

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
        heads = self.heads.branches(None if branches is None else set(branches))
        alone = self._newest_moving(heads)
        result.refs.extend(sync_branches(heads, self.sync_ref, gate, self.settings.branch_workers, alone=alone))
        if self.settings.mirror_tags and (branches is None if tags is None else tags):
            result.refs.extend(self._sync_differing_tags())
        result.duration_seconds = time.monotonic() - started
        in_flight = self.in_process.take_in_flight()
        if in_flight.peak:  # one line a pass that copied: how many copies ran at once, and why that many
            result.copies_in_flight = in_flight
            log.info("%s: %s", self.mirror_repo, in_flight.describe(), extra=self._fields())
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
        heads = self.heads.branches(None if branches is None else set(branches), mirror_missing_ok=True)
        found = [(RefKind.BRANCH, n, src, dst) for n, (src, dst) in heads.items()]
        if self.settings.mirror_tags and (branches is None if tags is None else tags):
            src_tags, dst_tags = self.tags()
            found += [(RefKind.TAG, n, src_tags.get(n), dst_tags.get(n)) for n in sorted(src_tags.keys() | dst_tags)]
        return found

    def tags(self) -> tuple[dict[str, str], dict[str, str]]:
        """Tag name -> commit ID at the source and at the mirror (empty for a mirror not created yet)."""
        return self.heads.tags()

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
        label = ref_label(kind, name)
        result = RefResult(kind, name, source_commit, mirror_commit, mirror_commit, action=RefAction.UNCHANGED)
        try:
            if source_commit is None:
                if mirror_commit is not None:
                    self.promoter.delete_ref(kind, name)
                    result.mirror_commit, result.action = None, RefAction.DELETED
            elif source_commit != mirror_commit:
                self.progress.ref_started(label, source_commit=source_commit)
                self._note_started(result)
                prepared = self.prepare(kind, name, source_commit)
                result.stats = prepared.stats
                if prepared.error is not None:
                    result.action, result.error = RefAction.BLOCKED, prepared.error
                    result.blocked_by = BlockReason.MISSING
                else:
                    result.action = self.promoter.promote(prepared, mirror_commit)
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
            self.progress.ref_finished(label)
        return result

    def prepare(self, kind: RefKind, name: str, target: str) -> PreparedRef:
        """Transfer and validate everything ``target`` needs at the destination (``history.py``); promotes
        nothing. Its objects count towards the progress of the ref ``<kind> <name>``."""
        return self.history.prepare(kind, name, target)

    def _fields(self, ref: RefResult | None = None) -> dict[str, str]:
        """The context of this mirror's log records (and of one ref's: its branch and source commit)."""
        branch = ref.name if ref is not None and ref.kind == RefKind.BRANCH else None
        commit = ref.source_commit if ref is not None else None
        return log_fields(mirror=self.mirror_repo, repository=self.source.repository, branch=branch, commit=commit)

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

    def note_lag(self, result: RefResult) -> None:
        """Set the source commit's time (also for a ref left behind it: how far behind it is, ``status``) and, for
        a ref that just moved there, the lag since that commit."""
        if result.source_commit is None:
            return
        created = self.planner.commit_time(result.source_commit)
        result.source_commit_time = created
        if result.mirror_commit == result.source_commit and result.action != RefAction.UNCHANGED:
            result.lag_seconds = max(0.0, time.time() - created)
