"""What a tick of a mirror's commit sensor decides: a run per branch that differs, partitions to add or delete.

Source and mirror branches are compared (paginated), and one run is requested per differing branch, keyed
``<mirror>/<branch>/<source head>@<mirror head>`` (``/retry-<n>`` after a blocked head's cooldown): one state never
launches two runs, any change of a head gets a fresh one. Tags are compared as a set, one ``tags`` run per
difference. A scan stops at ``max_requests`` or ``budget_seconds`` and says where the next one resumes; the
branches lakeFS hooks name are compared one by one (``scan_woken``) with the same run keys.
"""

import datetime as dt
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import dagster as dg

from ...mirrors import Mirror, MirrorBranch
from ...region import ReplicationService, pending_block
from ...replication.heads import branch_head, branch_heads, tag_commits
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from .checks import RANGES_VALIDATED
from .tags import tags_digest

__all__ = [
    "BRANCH_TAG",
    "MAX_REQUESTS_PER_TICK",
    "MIRROR_TAG",
    "SOURCE_COMMIT_TAG",
    "TICK_BUDGET_SECONDS",
    "BranchScan",
    "run_key",
    "scan_branches",
    "scan_woken",
    "tags_run_request",
]

MAX_REQUESTS_PER_TICK = 200
TICK_BUDGET_SECONDS = 40.0
MAX_PARTITION_DELETES_PER_TICK = 500
#: Tags of every run the sensor requests: the mirror, and for a branch run the branch and the source commit
#: it was requested for (``deleted`` when the source branch is gone), so runs can be filtered by each.
MIRROR_TAG = "lakefs_mirror/mirror"
BRANCH_TAG = "lakefs_mirror/branch"
SOURCE_COMMIT_TAG = "lakefs_mirror/source_commit"


def run_key(mirror: str, branch: str, source_head: str | None, mirror_head: str | None, retry: int = 0) -> str:
    """One run per state of the two heads, and per retry of a state whose runs were blocked."""
    key = f"{mirror}/{branch}/{source_head or 'deleted'}@{mirror_head or 'none'}"
    return f"{key}/retry-{retry}" if retry else key


@dataclass
class BranchScan:
    """What one tick decided: runs to request, partitions to add or delete, and where to resume."""

    requests: list[dg.RunRequest] = field(default_factory=list)
    add: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    resume_after: str = ""
    scanned: int = 0
    #: Differing branches blocked at their source head whose cooldown has not ended: no run this tick.
    cooling: list[str] = field(default_factory=list)
    #: The source head of each branch a run was requested for (observed on the source asset).
    source_heads: dict[str, str] = field(default_factory=dict)


def scan_branches(
    service: ReplicationService,
    mirror: Mirror,
    *,
    known_partitions: set[str],
    after: str = "",
    max_requests: int = MAX_REQUESTS_PER_TICK,
    budget_seconds: float = TICK_BUDGET_SECONDS,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> BranchScan:
    """Compare source and mirror branch heads for names after ``after`` (sorted), within the limits."""
    deadline = time.monotonic() + budget_seconds
    page = service.config.commit_sensor.list_branch_page_size
    src = branch_heads(service.client(mirror.source_region), mirror.source_repository, page_size=page)
    dst = branch_heads(service.client(mirror.destination_region), mirror.name, page_size=page, missing_ok=True)
    state = _BranchStates.read(service, mirror)
    scan = BranchScan()
    for name in sorted(set(src) | set(dst)):
        if name <= after:
            continue
        if len(scan.requests) >= max_requests or time.monotonic() > deadline:
            scan.resume_after = _last_scanned(scan, after)
            break
        scan.scanned += 1
        scan.resume_after = name
        heads = (src.get(name), dst.get(name))
        _compare_branch(service, mirror, scan, name, heads, known_partitions, state, options)
    else:
        scan.resume_after = ""  # a full pass: start from the first branch next tick
    gone = sorted(known_partitions - set(src) - set(dst))
    scan.delete = gone[:MAX_PARTITION_DELETES_PER_TICK]
    return scan


def scan_woken(
    service: ReplicationService,
    mirror: Mirror,
    branches: Iterable[str],
    *,
    known_partitions: set[str],
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> BranchScan:
    """What ``scan_branches`` decides, for only the ``branches`` lakeFS hooks named (their heads read one by
    one): the same run keys, so a branch a hook and the next full scan both find gets one run."""
    scan = BranchScan()
    state = _BranchStates.read(service, mirror)
    for name in branches:
        heads = (
            branch_head(service.client(mirror.source_region), mirror.source_repository, name),
            branch_head(service.client(mirror.destination_region), mirror.name, name),
        )
        scan.scanned += 1
        if heads[0] is not None or heads[1] is not None:
            _compare_branch(service, mirror, scan, name, heads, known_partitions, state, options)
    return scan


@dataclass(frozen=True)
class _BranchStates:
    """What one scan reads of the mirrors database once: the recorded branches and their blocks."""

    recorded: dict[str, MirrorBranch]
    blocks: dict[str, MirrorBranch]
    now: dt.datetime

    @classmethod
    def read(cls, service: ReplicationService, mirror: Mirror) -> "_BranchStates":
        recorded = {b.branch: b for b in service.mirrors.get_branches(mirror.id)}
        return cls(recorded, service.retries.blocks(mirror), dt.datetime.now(dt.UTC))


def _compare_branch(
    service: ReplicationService,
    mirror: Mirror,
    scan: BranchScan,
    name: str,
    heads: tuple[str | None, str | None],
    known_partitions: set[str],
    state: "_BranchStates",
    options: MirrorDefsOptions,
) -> None:
    """Add ``name``'s partition if new and, when its source and mirror heads differ, a run request (unless its
    blocked head is still in its cooldown), recording the source head's time for ``status``."""
    source_head, mirror_head = heads
    if name not in known_partitions:
        scan.add.append(name)
    if source_head == mirror_head:
        return
    block = pending_block(state.blocks.get(name), source_head)
    if block is not None and not block.due(state.now):
        scan.cooling.append(name)
        return
    scan.requests.append(
        dg.RunRequest(
            job_name=options.branches_job_name(mirror.name),
            partition_key=name,
            asset_selection=[options.branch_heads_key(mirror.name)],
            # Only the blocking check: the ``fresh`` check reads every branch of the mirror, and the
            # sensor evaluates it each tick; in each branch's run it would cost O(branches) per run.
            asset_check_keys=[dg.AssetCheckKey(options.branch_heads_key(mirror.name), RANGES_VALIDATED)],
            run_key=run_key(mirror.name, name, source_head, mirror_head, block.attempts if block else 0),
            tags={MIRROR_TAG: mirror.name, BRANCH_TAG: name, SOURCE_COMMIT_TAG: source_head or "deleted"},
        )
    )
    if source_head is not None:
        scan.source_heads[name] = source_head
    known = state.recorded.get(name)
    seen = known is not None and known.source_commit_id == source_head and known.source_commit_time
    if source_head is not None and not seen:  # with its time: how long the mirror is behind it (``status``)
        created = service.client(mirror.source_region).get_commit(mirror.source_repository, source_head)
        service.mirrors.record_branch(
            mirror.id,
            name,
            source_commit_id=source_head,
            source_commit_time=dt.datetime.fromtimestamp(created.creation_date, dt.UTC),
        )


def tags_run_request(
    service: ReplicationService, mirror: Mirror, options: MirrorDefsOptions = DEFAULT_OPTIONS
) -> dg.RunRequest | None:
    """One run of the mirror's tags asset when its tag set differs from the source's, else None."""
    page = service.config.commit_sensor.list_branch_page_size
    source = tags_digest(
        tag_commits(service.client(mirror.source_region), mirror.source_repository, page_size=page, missing_ok=True)
    )
    current = tags_digest(
        tag_commits(service.client(mirror.destination_region), mirror.name, page_size=page, missing_ok=True)
    )
    if source == current:
        return None
    return dg.RunRequest(
        job_name=options.tags_job_name(mirror.name),
        asset_selection=[options.tags_key(mirror.name)],
        run_key=f"{mirror.name}/tags/{source}@{current}",
        tags={MIRROR_TAG: mirror.name, "lakefs_mirror/tags": "all"},
    )


def _last_scanned(scan: BranchScan, after: str) -> str:
    return scan.resume_after or after
