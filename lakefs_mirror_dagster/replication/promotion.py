"""Promotion: the commit records of a prepared history (parents first), then the ref move, and nothing unless
the mirror ref still points where the caller read it. The last two writes of the engine's order."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..graveler import CommitData, GravelerError
from ..lakefs import Commit, LakeFSClient, LakeFSError
from ..storage import StorageError
from .errors import ReplicationError
from .failpoints import failpoint
from .heads import MirrorHeads
from .history import PreparedRef
from .planner import CommitPlanner
from .refstore import Refstore, SourceCommitTimes, commit_data
from .results import RefAction, RefKind

__all__ = ["COMMIT_RECORD_BATCH", "MirrorRefMoved", "Promoter"]

log = logging.getLogger(__name__)

#: Commit records written to the refstore database in one transaction: a history's records cost a round trip
#: per batch, not per commit (lakeFS's ``CreateCommitRecord`` takes one record a request).
COMMIT_RECORD_BATCH = 500


class MirrorRefMoved(ReplicationError):
    """The mirror ref moved between reading it and promoting: a concurrent sync or run got there first."""


class Promoter:
    """Writes a prepared ref's commit records and moves (or deletes) refs of the mirror repository.

    ``refstore``: where commit records are written with the source's sub-second times (None: lakeFS's API,
    whole seconds)."""

    def __init__(
        self,
        *,
        destination: LakeFSClient,
        mirror_repo: str,
        heads: MirrorHeads,
        planner: CommitPlanner,
        commit_times: SourceCommitTimes,
        refstore: Refstore | None,
    ) -> None:
        self.destination = destination
        self.mirror_repo = mirror_repo
        self.heads = heads
        self.planner = planner
        self.commit_times = commit_times
        self.refstore = refstore

    def promote(self, prepared: PreparedRef, mirror_commit: str | None) -> RefAction:
        """Create the commit records parents first, then point the ref at the target; returns the action
        (``created``, ``advanced`` or ``reset``). Refuses (MirrorRefMoved) when the mirror ref no longer
        points where it did when the caller read it: another run or process moved it meanwhile."""
        if prepared.error is not None:
            raise ReplicationError(f"refusing to promote {prepared.kind} {prepared.name}: {prepared.error}")
        now = self.heads.mirror_ref(prepared.kind, prepared.name)
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

    def delete_ref(self, kind: RefKind, name: str) -> None:
        """The mirror's branch or tag ``name`` deleted (its source ref is gone)."""
        if kind == RefKind.BRANCH:
            self.destination.delete_branch(self.mirror_repo, name, force=True)
        else:
            self.destination.delete_tag(self.mirror_repo, name, force=True)

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
