"""The mirroring engine of one mirror: plan, transfer, validate, promote (free of Dagster, usable alone)."""

from .engine import MirrorEngine
from .errors import ReplicationError
from .in_flight import BranchProgress, branch_progress, in_flight_line
from .in_process import InProcessTransferer
from .plug_choice import EnginePlugs, Plugs
from .plugs import (
    RangeBatch,
    RangeTransferer,
    RangeValidator,
    RefGate,
    RefRecorder,
    SyncingRef,
    ValidatedCache,
    in_process_validator,
)
from .promotion import MirrorRefMoved
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
from .settings import EngineSettings
from .source import ApiObjectReader, RepositorySource, SourceReader
from .validation import RangeValidation, metadata_uri, read_metarange, validate_range

__all__ = [
    "PROMOTED",
    "ApiObjectReader",
    "BlockReason",
    "BranchProgress",
    "EnginePlugs",
    "EngineSettings",
    "InProcessTransferer",
    "MirrorEngine",
    "MirrorRefMoved",
    "MirrorSyncResult",
    "Plugs",
    "RangeBatch",
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
    "SyncingRef",
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
