"""A region's record of each mirrored branch in the mirrors database: the source head it goes to, the commit it
is at, its lag and its retry schedule. Every engine the service builds reports each ref here, so the CLI, the REST
service and Dagster runs record branch states one way."""

from __future__ import annotations

import datetime as dt

from ..mirrors import Mirror, MirrorsDatabase
from ..replication import RefAction, RefKind, RefResult
from .retry import RetrySchedule

__all__ = ["BranchStates"]


class BranchStates:
    """Writes what the engine reports of a mirror's branches into the mirrors database."""

    def __init__(self, mirrors: MirrorsDatabase, retries: RetrySchedule) -> None:
        self.mirrors = mirrors
        self.retries = retries

    def source_commit_times(self, mirror: Mirror) -> dict[str, int]:
        """Source head -> that commit's time, as the mirror's branch records keep them (read once per engine): the
        engine then asks the source for no time it recorded already (``MirrorEngine``'s ``known_commit_times``)."""
        return {
            b.source_commit_id: int(b.source_commit_time.timestamp())
            for b in self.mirrors.get_branches(mirror.id)
            if b.source_commit_id is not None and b.source_commit_time is not None
        }

    def record_source_head(self, mirror: Mirror, ref: RefResult) -> None:
        """A branch about to be advanced: the source head it goes to and that commit's time (as the Dagster sensor
        records a head it finds), so ``status`` and the metrics show how far behind it is while it is copied.
        Leaves the mirrored commit and any block as they are."""
        if ref.kind != RefKind.BRANCH or ref.source_commit is None:
            return
        self.mirrors.record_branch(
            mirror.id,
            ref.name,
            source_commit_id=ref.source_commit,
            source_commit_time=_source_commit_time(ref),
        )

    def record_ref(self, mirror: Mirror, ref: RefResult) -> None:
        """A branch's state in the mirrors database (what the API and ``status`` report); every engine the
        service builds calls it for every ref it syncs, so the CLI, the REST service and Dagster runs agree.
        A blocked branch gets its retry time (``RetrySchedule.note``); any other outcome clears it."""
        if ref.kind != RefKind.BRANCH:
            return
        if ref.action == RefAction.DELETED:
            self.mirrors.delete_branch(mirror.id, ref.name)
            return
        self.mirrors.record_branch(
            mirror.id,
            ref.name,
            source_commit_id=ref.source_commit,
            source_commit_time=_source_commit_time(ref),
            mirrored_commit_id=ref.mirror_commit,
            promoted_at=dt.datetime.now(dt.UTC) if ref.promoted else None,
            lag_seconds=ref.lag_seconds if ref.promoted else None,
            unblock=ref.action != RefAction.BLOCKED,
        )
        self.retries.note(mirror, ref)


def _source_commit_time(ref: RefResult) -> dt.datetime | None:
    """The source commit's time as the mirrors database keeps it (UTC), if the ref carries one."""
    return dt.datetime.fromtimestamp(ref.source_commit_time, dt.UTC) if ref.source_commit_time else None
