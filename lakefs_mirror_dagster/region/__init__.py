"""The region's service around the engine: its mirrors, their sync passes and retry schedule, hook wake-ups,
status, scrub and GC deletions (free of Dagster, usable alone)."""

from .gc_deletions import GcResult, GcSettings, mirror_gc_deletions, run_gc_deletions
from .hook_action import ACTION_PATH, install_hooks
from .hooks import HOOK_EVENTS, HookEvent, WokenMirror, queue_hook_event, read_woken, sync_woken, wait_woken
from .retry import BranchBlock, RetrySchedule, pending_block
from .service import RETIRING, ReplicationService
from .storages import StorageDescription, describe_storages, missing_stores
from .sync_loop import ScheduledPass, sync_passes, wait_for_pass
from .sync_plan import MirrorPlan, PlannedRef, plan_sync

__all__ = [
    "ACTION_PATH",
    "HOOK_EVENTS",
    "RETIRING",
    "BranchBlock",
    "GcResult",
    "GcSettings",
    "HookEvent",
    "MirrorPlan",
    "PlannedRef",
    "ReplicationService",
    "RetrySchedule",
    "ScheduledPass",
    "StorageDescription",
    "WokenMirror",
    "describe_storages",
    "install_hooks",
    "mirror_gc_deletions",
    "missing_stores",
    "pending_block",
    "plan_sync",
    "queue_hook_event",
    "read_woken",
    "run_gc_deletions",
    "sync_passes",
    "sync_woken",
    "wait_for_pass",
    "wait_woken",
]
