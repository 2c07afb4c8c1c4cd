"""The retry schedule of blocked branches: when a branch whose sync was blocked may be tried again.

A blocked sync (``RefAction.BLOCKED``) is classified by ``RefResult.blocked_by``: objects, ranges or the
metarange missing or invalid at the destination wait ``validator.cooldown_on_missing``; an error (an
exception: store, lakeFS or database failure) waits ``validator.cooldown_on_error``. The earliest retry time
is kept with the source commit the branch was blocked at in the mirrors database (``mirror_branches``), so
every process and region sharing it (the ``sync`` loop, Dagster runs and sensors) follows one schedule. A
new source head is a new target: the old block no longer holds. No Dagster in here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from ..config import ValidatorConfig
from ..mirrors import Mirror, MirrorBranch, MirrorsDatabase
from ..replication import BlockReason, RefAction, RefGate, RefKind, RefResult

__all__ = ["BranchBlock", "RetrySchedule", "pending_block"]


@dataclass(frozen=True)
class BranchBlock:
    """A branch blocked at ``commit``: why, until when, and how many tries of that commit were blocked."""

    commit: str
    reason: BlockReason
    retry_after: dt.datetime
    attempts: int

    def due(self, now: dt.datetime) -> bool:
        """Whether the cooldown has ended at ``now``."""
        return now >= self.retry_after

    def describe(self, now: dt.datetime) -> str:
        """The operator's line for a branch skipped in its cooldown."""
        wait = max(0.0, (self.retry_after - now).total_seconds())
        return (
            f"blocked at {self.commit[:12]} ({self.reason}, {self.attempts} tr{'y' if self.attempts == 1 else 'ies'}); "
            f"not retried before {self.retry_after.isoformat(timespec='seconds')} (in {wait:.1f}s, "
            f"validator.cooldown_on_{self.reason})"
        )


def pending_block(record: MirrorBranch | None, source_commit: str | None) -> BranchBlock | None:
    """The block that still holds for a branch whose source head is ``source_commit``: None when the branch
    was never blocked, synced since, or its head moved (a new target is tried at once)."""
    if record is None or record.blocked_commit_id is None or record.retry_after is None:
        return None
    if source_commit is None or record.blocked_commit_id != source_commit:
        return None
    return BranchBlock(
        commit=record.blocked_commit_id,
        reason=BlockReason(record.blocked_reason or BlockReason.ERROR),
        retry_after=record.retry_after,
        attempts=max(1, record.blocked_attempts),
    )


class RetrySchedule:
    """Blocks and unblocks branches in the mirrors database, and answers which may be tried now."""

    def __init__(self, mirrors: MirrorsDatabase, validator: ValidatorConfig) -> None:
        self.mirrors = mirrors
        self.cooldowns: Mapping[BlockReason, dt.timedelta] = {
            BlockReason.MISSING: validator.cooldown_on_missing,
            BlockReason.ERROR: validator.cooldown_on_error,
        }

    def note(self, mirror: Mirror, ref: RefResult) -> None:
        """After a branch sync: a blocked one waits its reason's cooldown (from now) before the next try."""
        if ref.kind != RefKind.BRANCH or ref.action != RefAction.BLOCKED or ref.source_commit is None:
            return
        reason = ref.blocked_by or BlockReason.ERROR
        self.mirrors.block_branch(
            mirror.id,
            ref.name,
            commit_id=ref.source_commit,
            reason=reason.value,
            retry_after=_now() + self.cooldowns[reason],
        )

    def blocks(self, mirror: Mirror) -> dict[str, MirrorBranch]:
        """The mirror's recorded branches that carry a block (whatever their source head now)."""
        return {b.branch: b for b in self.mirrors.get_branches(mirror.id) if b.blocked_commit_id is not None}

    def due_branches(self, mirror: Mirror) -> list[str]:
        """Blocked branches whose cooldown has ended: what a retry pass tries again."""
        now = _now()
        return [name for name, b in self.blocks(mirror).items() if b.retry_after is None or b.retry_after <= now]

    def gate(self, mirror: Mirror) -> RefGate:
        """For one pass over ``mirror``: holds back each branch still in its cooldown at the same source head
        (reported ``deferred`` with when it is tried again); reads the blocks once."""
        blocks = self.blocks(mirror)

        def hold(kind: RefKind, name: str, source: str | None, mirror_commit: str | None) -> RefResult | None:
            now = _now()
            block = pending_block(blocks.get(name), source)
            if kind != RefKind.BRANCH or block is None or block.due(now):
                return None
            return RefResult(
                kind,
                name,
                source,
                mirror_commit,
                mirror_commit,
                action=RefAction.DEFERRED,
                error=block.describe(now),
                blocked_by=block.reason,
            )

        return hold


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
