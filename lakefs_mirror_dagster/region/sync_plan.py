"""``sync --dry-run``: what one pass would do to each mirror of this region, read and never written.

The engine has no side-effect-free plan of the copy itself: it plans, copies and validates range by range
while it reads the source, so the number of objects a ref's move copies is only known by copying. What is
known beforehand, and what this reports, is the ref level: which mirror repositories would be created or
deleted, and which branches and tags would be created, moved (to which commit) or deleted. A move can still
end blocked (a failed transfer or validation), and a branch in its retry cooldown would wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..lakefs import LakeFSNotFound
from .service import RETIRING
from .storages import missing_stores

if TYPE_CHECKING:
    from .service import ReplicationService

__all__ = ["MirrorPlan", "PlannedRef", "plan_sync"]


@dataclass(frozen=True)
class PlannedRef:
    """One ref whose mirror commit differs from its source's, and what the pass would do about it."""

    kind: str
    name: str
    source_commit: str | None
    mirror_commit: str | None

    @property
    def action(self) -> str:
        if self.source_commit is None:
            return "delete"
        return "create" if self.mirror_commit is None else "move"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "action": self.action,
            "source_commit": self.source_commit,
            "mirror_commit": self.mirror_commit,
        }


@dataclass
class MirrorPlan:
    """One mirror's part of the pass: its repository (``create``, ``exists``, ``delete``), its refs to change
    (refs already equal are counted, not listed), or why it would not be synced."""

    mirror: str
    source_repository: str
    repository: str = "exists"
    refs: list[PlannedRef] = field(default_factory=list)
    unchanged: int = 0
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "mirror": self.mirror,
            "source_repository": self.source_repository,
            "repository": self.repository,
            "refs": [r.to_json() for r in self.refs],
            "unchanged": self.unchanged,
            "error": self.error or None,
        }


def plan_sync(
    service: ReplicationService, *, name: str | None = None, branches: list[str] | None = None
) -> list[MirrorPlan]:
    """What ``service.sync(name=name, branches=branches)`` (a full pass) would do, read from lakeFS and the
    mirrors database without writing to either."""
    mine = [m for m in service.my_mirrors() if name is None or m.name == name]
    storeless = missing_stores(service.config, mine)
    plans = []
    for mirror in mine:
        plan = MirrorPlan(mirror=mirror.name, source_repository=mirror.source_repository)
        plans.append(plan)
        if mirror.id in storeless:
            plan.error = storeless[mirror.id]
            continue
        if mirror.state in RETIRING:
            plan.repository = "delete"
            continue
        try:
            engine = service.engine_for(mirror)
            try:
                engine.destination.get_repository(mirror.name)
            except LakeFSNotFound:
                plan.repository = "create"
            for kind, ref, src, dst in engine.ref_heads(branches=branches or None):
                if src == dst:
                    plan.unchanged += 1
                else:
                    plan.refs.append(PlannedRef(str(kind), ref, src, dst))
        except Exception as exc:  # as in a pass: one mirror that cannot be read never hides the others
            plan.error = f"{type(exc).__name__}: {exc}"
    return plans
