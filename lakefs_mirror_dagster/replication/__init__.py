"""The mirroring engine: plan, transfer, validate, promote (free of Dagster, usable alone)."""

from .engine import MirrorEngine
from .errors import ReplicationError
from .gc_deletions import GcResult, GcSettings, mirror_gc_deletions, run_gc_deletions
from .hook_action import ACTION_PATH, install_hooks
from .hooks import HOOK_EVENTS, HookEvent, WokenMirror, queue_hook_event, read_woken, sync_woken, wait_woken
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
from .retry import BranchBlock, RetrySchedule, pending_block
from .service import RETIRING, ReplicationService
from .settings import EngineSettings
from .source import ApiObjectReader, RepositorySource, SourceReader
from .storages import StorageDescription, describe_storages, missing_stores
from .sync_loop import ScheduledPass, sync_passes, wait_for_pass
from .sync_plan import MirrorPlan, PlannedRef, plan_sync
from .validation import RangeValidation, metadata_uri, read_metarange, validate_range

__all__ = [
    "ACTION_PATH",
    "HOOK_EVENTS",
    "PROMOTED",
    "RETIRING",
    "ApiObjectReader",
    "BlockReason",
    "BranchBlock",
    "BranchProgress",
    "EnginePlugs",
    "EngineSettings",
    "GcResult",
    "GcSettings",
    "HookEvent",
    "InProcessTransferer",
    "MirrorEngine",
    "MirrorPlan",
    "MirrorRefMoved",
    "MirrorSyncResult",
    "PlannedRef",
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
    "ReplicationService",
    "RepositorySource",
    "RetrySchedule",
    "ScheduledPass",
    "SourceReader",
    "StorageDescription",
    "SyncPass",
    "SyncPassListener",
    "SyncingRef",
    "TransferStats",
    "ValidatedCache",
    "WokenMirror",
    "branch_progress",
    "describe_storages",
    "in_flight_line",
    "in_process_validator",
    "install_hooks",
    "metadata_uri",
    "mirror_gc_deletions",
    "missing_stores",
    "pending_block",
    "plan_sync",
    "queue_hook_event",
    "range_changes",
    "read_metarange",
    "read_woken",
    "run_gc_deletions",
    "sync_passes",
    "sync_woken",
    "transfer_range",
    "validate_range",
    "wait_for_pass",
    "wait_woken",
]
