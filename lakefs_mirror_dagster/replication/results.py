"""What one sync did, per ref and per mirror: the figures the CLI prints and Dagster records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from ..mirrors import RefKind
from ..storage import InFlightFigures

__all__ = [
    "MOVED",
    "PROMOTED",
    "BlockReason",
    "MirrorSyncResult",
    "RefAction",
    "RefKind",
    "RefResult",
    "SyncPass",
    "SyncPassListener",
    "TransferStats",
]


class RefAction(StrEnum):
    """What one sync did to a mirror ref: the one vocabulary of the CLI, the API, Dagster and its history."""

    UNCHANGED = "unchanged"
    #: The ref did not exist at the mirror and now points at the source's commit.
    CREATED = "created"
    #: A fast-forward: the old mirror commit is an ancestor of the new one.
    ADVANCED = "advanced"
    #: Moved to a commit that does not descend from the old one (the source was reset or force-moved).
    RESET = "reset"
    DELETED = "deleted"
    #: Not moved: transfer or validation failed (``RefResult.error`` says why); the mirror keeps its old commit.
    BLOCKED = "blocked"
    #: Not tried in this pass: blocked at this same source commit before, and its cooldown has not ended.
    DEFERRED = "deferred"


class BlockReason(StrEnum):
    """Why a ref was blocked, which picks its cooldown (``validator.cooldown_on_missing`` / ``_on_error``)."""

    #: Objects, ranges or the metarange missing at the destination or failing validation there.
    MISSING = "missing"
    #: An exception: a store, lakeFS API or database failure, a source commit that does not verify, ...
    ERROR = "error"


#: Actions after which the mirror ref points at a commit it did not point at before.
PROMOTED = frozenset({RefAction.CREATED, RefAction.ADVANCED, RefAction.RESET})
#: What moved a mirror ref: a promotion or a deletion (the moves Dagster's event log records).
MOVED = PROMOTED | {RefAction.DELETED}


@dataclass
class TransferStats:
    """Counts of bytes and files moved (or found already present) at the destination."""

    commits: int = 0
    metaranges: int = 0
    ranges_transferred: int = 0
    ranges_skipped: int = 0
    ranges_read_from_source: int = 0
    ranges_validated: int = 0
    #: Validated range or metarange files found changed or missing at the destination since: checked again.
    files_changed_since_validation: int = 0
    objects_copied: int = 0
    #: Found already at the destination (listed, or a HEAD each).
    objects_skipped: int = 0
    #: Identical to an entry of a validated range the new range replaces: neither copied nor looked at.
    objects_unchanged: int = 0
    bytes_copied: int = 0
    #: How the content of each copied object was checked against lakeFS's checksum (``storage.Check``):
    #: its MD5, its multipart ETag for the part size found, or its size alone.
    objects_checked_md5: int = 0
    objects_checked_multipart: int = 0
    objects_checked_size: int = 0
    #: Objects validated at the destination whose ETag could not be compared with the checksum: size only.
    objects_validated_by_size: int = 0
    full_address_objects: int = 0
    full_address_examples: list[str] = field(default_factory=list)
    failed_objects: list[str] = field(default_factory=list)
    failed_object_count: int = 0
    #: ``transfer.mode: external``: objects of new ranges left to the store's replication (not copied here).
    objects_awaited: int = 0
    #: Objects validation did not find at the destination (or found with another size or MD5): with external
    #: transfer, those the store's replication has not delivered yet; the ref waits for them.
    objects_missing: int = 0
    #: Range and metarange files already at the destination byte for byte (external mode: replicated too).
    metadata_files_present: int = 0
    #: Where objects were copied: ``in_process``, ``spark``, both joined by ``+``, ``external`` (none: the
    #: store's replication brings them, only range files were put), or ``""`` (no new ranges).
    transfer_path: str = ""

    @property
    def objects_handled(self) -> int:
        """Objects of the transferred ranges dealt with: copied, found present, unchanged, or left to the store's
        replication (progress counts these against the metarange's planned counts)."""
        return self.objects_copied + self.objects_skipped + self.objects_unchanged + self.objects_awaited

    def note_path(self, path: str) -> None:
        """Record that a batch was transferred on ``path`` (``in_process`` or ``spark``)."""
        self.transfer_path = "+".join(sorted(set(filter(None, self.transfer_path.split("+"))) | {path}))

    def figures(self) -> dict[str, int]:
        """The counts an operator reads (Dagster metadata of both mirror assets): what moved, what was
        already there, and how the copied objects' content was checked."""
        return {
            "commits": self.commits,
            "ranges_transferred": self.ranges_transferred,
            "objects": self.objects_copied,
            "objects_already_present": self.objects_skipped + self.objects_unchanged,
            "bytes": self.bytes_copied,
            "objects_checked_md5": self.objects_checked_md5,
            "objects_checked_multipart": self.objects_checked_multipart,
            "objects_checked_size": self.objects_checked_size,
            "objects_validated_by_size": self.objects_validated_by_size,
            "objects_awaited": self.objects_awaited,
            "objects_missing": self.objects_missing,
        }

    def note_checks(self, checks: Mapping[str, int]) -> None:
        """Add a transfer's per-check counts (``TransferSummary.checks``)."""
        self.objects_checked_md5 += checks.get("md5", 0)
        self.objects_checked_multipart += checks.get("multipart_md5", 0)
        self.objects_checked_size += checks.get("size", 0)

    def add(self, other: TransferStats) -> None:
        for name, value in vars(other).items():
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        self.full_address_examples.extend(other.full_address_examples[: 20 - len(self.full_address_examples)])
        self.failed_objects.extend(other.failed_objects[: 20 - len(self.failed_objects)])
        for path in filter(None, other.transfer_path.split("+")):
            self.note_path(path)


@dataclass
class RefResult:
    """One branch or tag: where the source pointed, where the mirror points now, and why."""

    kind: RefKind
    name: str
    source_commit: str | None
    mirror_commit_before: str | None
    mirror_commit: str | None
    action: RefAction
    stats: TransferStats = field(default_factory=TransferStats)
    source_commit_time: int | None = None
    lag_seconds: float | None = None
    duration_seconds: float = 0.0
    error: str | None = None
    #: Set with ``blocked`` (and ``deferred``): why, which picks the cooldown before the next try.
    blocked_by: BlockReason | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def promoted(self) -> bool:
        """Whether this sync moved the mirror ref to a new commit."""
        return self.action in PROMOTED

    @property
    def moved(self) -> bool:
        """Whether this sync moved the mirror ref (promoted it, or deleted it with its source branch)."""
        return self.action in MOVED

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["kind"], doc["action"] = str(self.kind), str(self.action)
        return doc


@dataclass
class MirrorSyncResult:
    """All refs of one mirror after one pass."""

    mirror: str
    source_repository: str
    refs: list[RefResult] = field(default_factory=list)
    duration_seconds: float = 0.0
    #: Why the mirror as a whole could not be synced in this pass (its refs are then not listed).
    error: str | None = None
    #: The pass's object copies in this process: most at once, the limit (``transfer.concurrency``; ``auto``: as
    #: chosen from the source reads' round trip) and that round trip. None when nothing was copied here.
    copies_in_flight: InFlightFigures | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(r.ok for r in self.refs)

    def to_json(self) -> dict[str, Any]:
        return {
            "mirror": self.mirror,
            "source_repository": self.source_repository,
            "ok": self.ok,
            "error": self.error,
            "duration_seconds": self.duration_seconds,
            "copies_in_flight": asdict(self.copies_in_flight) if self.copies_in_flight is not None else None,
            "refs": [r.to_json() for r in self.refs],
        }


@dataclass(frozen=True)
class SyncPass:
    """One finished ``ReplicationService.sync`` call, for its listeners (``on_synced``; the metrics count it).

    ``kind``: ``full`` (every ref of the mirrors asked for), ``retry`` (only blocked branches whose cooldown ended)
    or ``refs`` (named branches: ``sync --branch``, or the refs a lakeFS hook woke)."""

    kind: str
    results: list[MirrorSyncResult]
    seconds: float


SyncPassListener = Callable[[SyncPass], None]
