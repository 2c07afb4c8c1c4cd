"""The mirroring engine of one mirror: plan, transfer, validate, promote (free of Dagster, usable alone)."""

from .engine import (
    EngineSettings,
    MirrorEngine,
    MirrorRefMoved,
    RangeTransferer,
    RangeValidator,
    RefRecorder,
    ReplicationError,
    ValidatedCache,
    in_process_validator,
)
from .in_flight import BranchProgress, branch_progress, in_flight_line
from .plugs import RefGate
from .range_changes import RangeChanges, RangeReads, range_changes
from .range_transfer import RangeSource, RangeTransferSummary, transfer_range
from .results import (
    PROMOTED,
    BlockReason,
    MirrorSyncResult,
    RefAction,
    RefKind,
    RefResult,
    SyncPass,
    SyncPassListener,
    TransferStats,
)
from .source import ApiObjectReader, RepositorySource, SourceReader
from .validation import RangeValidation, metadata_uri, read_metarange, validate_range

__all__ = [
    "PROMOTED",
    "ApiObjectReader",
    "BlockReason",
    "BranchProgress",
    "EngineSettings",
    "MirrorEngine",
    "MirrorRefMoved",
    "MirrorSyncResult",
    "RangeChanges",
    "RangeReads",
    "RangeSource",
    "RangeTransferSummary",
    "RangeTransferer",
    "RangeValidation",
    "RangeValidator",
    "RefAction",
    "RefGate",
    "RefKind",
    "RefRecorder",
    "RefResult",
    "ReplicationError",
    "RepositorySource",
    "SourceReader",
    "SyncPass",
    "SyncPassListener",
    "TransferStats",
    "ValidatedCache",
    "branch_progress",
    "in_flight_line",
    "in_process_validator",
    "metadata_uri",
    "range_changes",
    "read_metarange",
    "transfer_range",
    "validate_range",
]
