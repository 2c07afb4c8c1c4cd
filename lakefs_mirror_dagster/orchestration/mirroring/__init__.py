"""Mirroring, the Dagster way: per mirror a branch-heads asset (one partition per branch) and a tags asset, the
blocking ``ranges_validated`` check, the commit sensor that requests runs, and the manager sensor that activates
and retires mirrors."""

from .branch_heads import (
    ASSET_PREFIX,
    SYNC_STARTED,
    branch_partitions,
    branch_partitions_name,
    build_branch_heads_asset,
    mirror_asset_key,
)
from .branch_scan import BRANCH_TAG, MIRROR_TAG, SOURCE_COMMIT_TAG, BranchScan, run_key, scan_branches
from .commits import build_commit_sensor, commit_sensor_name
from .hook_listeners import build_hooks_sensor, hooks_sensor_name
from .manager import MANAGER_SENSOR_NAME, ManagerReport, build_mirrors_manager_sensor, reconcile_mirrors
from .spark import SparkValidatorResource
from .tags import build_tags_asset, tags_asset_key, tags_digest

__all__ = [
    "ASSET_PREFIX",
    "BRANCH_TAG",
    "MANAGER_SENSOR_NAME",
    "MIRROR_TAG",
    "SOURCE_COMMIT_TAG",
    "SYNC_STARTED",
    "BranchScan",
    "ManagerReport",
    "SparkValidatorResource",
    "branch_partitions",
    "branch_partitions_name",
    "build_branch_heads_asset",
    "build_commit_sensor",
    "build_hooks_sensor",
    "build_mirrors_manager_sensor",
    "build_tags_asset",
    "commit_sensor_name",
    "hooks_sensor_name",
    "mirror_asset_key",
    "reconcile_mirrors",
    "run_key",
    "scan_branches",
    "tags_asset_key",
    "tags_digest",
]
