"""Plain, immutable views of lakeFS objects, decoupled from the generated SDK's pydantic models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Commit", "Ref", "Repository"]


@dataclass(frozen=True)
class Repository:
    id: str
    storage_namespace: str
    default_branch: str
    read_only: bool
    storage_id: str = ""
    creation_date: int = 0


@dataclass(frozen=True)
class Ref:
    """A branch or tag: its name and the commit it points at."""

    id: str
    commit_id: str


@dataclass(frozen=True)
class Commit:
    """Every field of a lakeFS commit record, exactly as ``CreateCommitRecord`` needs it."""

    id: str
    parents: tuple[str, ...]
    committer: str
    message: str
    creation_date: int
    metarange_id: str
    metadata: dict[str, str] = field(default_factory=dict, hash=False)
    generation: int = 0
    version: int = 1

    @classmethod
    def from_api(cls, c: Any) -> Commit:
        return cls(
            id=c.id,
            parents=tuple(c.parents or ()),
            committer=c.committer,
            message=c.message,
            creation_date=int(c.creation_date),
            metarange_id=c.meta_range_id,
            metadata=dict(c.metadata or {}),
            generation=int(c.generation or 0),
            version=int(c.version if c.version is not None else 1),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parents": list(self.parents),
            "committer": self.committer,
            "message": self.message,
            "creation_date": self.creation_date,
            "metarange_id": self.metarange_id,
            "metadata": dict(self.metadata),
            "generation": self.generation,
            "version": self.version,
        }
