"""Sensors: a commit sensor per mirror, the mirrors manager, code-location reloads, and an in-process driver."""

from .commits import BranchScan, build_commit_sensor, commit_sensor_name, run_key, scan_branches
from .converge import ConvergeResult, RunOutcome, run_until_converged
from .manager import MANAGER_SENSOR_NAME, ManagerReport, build_mirrors_manager_sensor, reconcile_mirrors
from .reload import RELOAD_URL_ENV, ReloadTarget, find_reload_target, request_reload

__all__ = [
    "MANAGER_SENSOR_NAME",
    "RELOAD_URL_ENV",
    "BranchScan",
    "ConvergeResult",
    "ManagerReport",
    "ReloadTarget",
    "RunOutcome",
    "build_commit_sensor",
    "build_mirrors_manager_sensor",
    "commit_sensor_name",
    "find_reload_target",
    "reconcile_mirrors",
    "request_reload",
    "run_key",
    "run_until_converged",
    "scan_branches",
]
