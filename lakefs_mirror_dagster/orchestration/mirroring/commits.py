"""Per-mirror commit sensor: finds branches (and tags) that differ from the mirror and requests runs.

Each tick compares source and mirror branches (paginated), keeps the branch partitions in step and requests one
run per differing branch, keyed ``<mirror>/<branch>/<source head>@<mirror head>`` (``/retry-<n>`` after a
blocked head's cooldown): one state never launches two runs, any change of a head gets a fresh one. Tags are
compared as a set, one ``tags`` run per difference. A tick stops at ``max_requests`` or ``budget_seconds`` and
its cursor resumes. With hooks, listeners tick between scans for queued wake-ups (``sensor_listeners``; details
on ``hooks_sensor_name``); every run key is first recorded per (mirror, ref), since Dagster deduplicates per sensor.
"""

import datetime as dt
import json
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ...mirrors import Mirror, MirrorBranch, MirrorState
from ...mirrors.wakeups import LOST_REQUEST
from ...region import ReplicationService, WokenMirror, pending_block, read_woken, wait_woken
from ...replication.heads import branch_head, branch_heads, tag_commits
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from .branch_heads import branch_partitions, commit_url
from .checks import RANGES_VALIDATED
from .tags import tags_digest

__all__ = [
    "BRANCH_TAG",
    "MIRROR_TAG",
    "SOURCE_COMMIT_TAG",
    "BranchScan",
    "build_commit_sensor",
    "build_hooks_sensor",
    "commit_sensor_name",
    "hooks_sensor_name",
    "run_key",
    "scan_branches",
    "scan_woken",
    "tags_run_request",
]

#: What a commit sensor launches: the mirror's in-process jobs (``mirroring_definitions``) or its assets.
SensorTarget = Any
MAX_REQUESTS_PER_TICK = 200
TICK_BUDGET_SECONDS = 40.0
MAX_PARTITION_DELETES_PER_TICK = 500
#: How many moved branches one observation of the source asset links to.
MAX_OBSERVED_BRANCHES = 50
#: Tags of every run the sensor requests: the mirror, and for a branch run the branch and the source commit
#: it was requested for (``deleted`` when the source branch is gone), so runs can be filtered by each.
MIRROR_TAG = "lakefs_mirror/mirror"
BRANCH_TAG = "lakefs_mirror/branch"
SOURCE_COMMIT_TAG = "lakefs_mirror/source_commit"
#: Dagster's own run tags (system tags, stable across releases; the constants live in a private module).
RUN_KEY_TAG = "dagster/run_key"
SENSOR_NAME_TAG = "dagster/sensor_name"


#: Dagster's sensor daemon starts the ticks of every sensor not still running once per loop of this many seconds
#: (``dagster._daemon.sensor.MIN_INTERVAL_LOOP_TIME``).
DAEMON_LOOP_SECONDS = 5.0
#: A listening tick that does not take the turn across the next loop returns this long before it, so that its
#: sensor is idle (tick recorded) when the next loop starts it again: the call from the daemon to the code server
#: and the tick's set-up before its wait (up to about 1 s on a loaded machine) come on top.
LOOP_MARGIN_SECONDS = 1.5
#: Until when each listening tick of each mirror waits (``time.monotonic()``), shared by the ticks of this
#: process (the code server evaluates every sensor of the location): how listeners take turns.
_LISTENING: dict[str, dict[str, float]] = {}
_LISTENING_LOCK = threading.Lock()


def commit_sensor_name(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> str:
    return options.name(f"{mirror.replace('-', '_')}_commits")


def hooks_sensor_name(mirror: str, listener: int, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> str:
    """The ``listener``-th (2, 3, ...) sensor that waits for ``mirror``'s hooks (the commit sensor is the first).

    With ``hooks.enabled`` the commit sensor also ticks every second between its scans for the refs hooks queued
    (``region/hooks.py``), waiting up to ``hooks.sensor_wait`` for one. Dagster starts a sensor's tick at most
    once per daemon loop (5 s) and never while its last tick runs, so one sensor that found a hook leaves nobody
    listening until the next loop: with ``hooks.sensor_listeners`` above 1 these sensors wait beside it, claim
    wake-ups (exactly one tick takes each) and take turns waiting across the next loop.
    """
    return options.name(f"{mirror.replace('-', '_')}_hooks_{listener}")


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


def build_commit_sensor(
    mirror: str,
    target: SensorTarget,
    *,
    tags_target: SensorTarget | None = None,
    interval_seconds: int,
    max_requests: int = MAX_REQUESTS_PER_TICK,
    budget_seconds: float = TICK_BUDGET_SECONDS,
    max_behind_seconds: float | None = None,
    hooks_interval_seconds: int | None = None,
    hooks_wait_seconds: float = 0.0,
    hooks_listeners: int = 1,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> dg.SensorDefinition:
    """The commit sensor of one mirror, running by default so a new mirror replicates without a click. With
    ``max_behind_seconds``, each tick also evaluates the mirror's ``fresh`` check (``freshness.py``).

    With ``hooks_interval_seconds`` (``hooks.enabled``), it ticks that often: a tick reads the wake-up queue
    lakeFS hooks fill (one query) and requests runs for the refs it names, and only every ``interval_seconds``
    (or while a full scan is unfinished) it scans every branch as without hooks. Both use the same run keys in
    the same sensor, so a change a hook and a scan both see gets one run. With ``hooks_wait_seconds``
    (``hooks.sensor_wait``), a hooks tick that finds the queue empty keeps reading it that long: Dagster's sensor
    daemon starts a tick at most every 5 s, so without it a hook waits 2.5 s on average for the next tick. With
    ``hooks_listeners`` > 1 it is the first of that many listeners (``build_hooks_sensor``): wake-ups are claimed
    and every run key recorded first (see the module's docstring)."""
    partitions = branch_partitions(mirror, options)
    name = commit_sensor_name(mirror, options)
    shared = hooks_listeners > 1

    @dg.sensor(
        name=name,
        jobs=[target] + ([tags_target] if tags_target is not None else []),
        minimum_interval_seconds=hooks_interval_seconds or interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        required_resource_keys={options.resource_key},
        description=f"Requests a run for every branch of mirror {mirror} whose source head moved, and for its tags.",
    )
    def commit_sensor(context: dg.SensorEvaluationContext, **_resources: object) -> dg.SensorResult:
        started = time.monotonic()
        service = options.replication(context).service()
        state = json.loads(context.cursor) if context.cursor else {}
        woken: list[WokenMirror] = []
        if hooks_interval_seconds is not None:
            if time.time() - state.get("full_at", 0.0) < interval_seconds:
                woken = _listen(service, mirror, name, started, hooks_wait_seconds, claim=shared)
                return _woken_result(
                    context, service, woken, options, tags_target is not None, requester=name if shared else None
                )
            woken, _ = read_woken(service, name=mirror)
        found = next(service.my_mirrors(name=mirror), None)
        if found is None or found.state != MirrorState.ACTIVE:
            state = "gone" if found is None else found.state.value
            return dg.SensorResult(skip_reason=f"mirror {mirror} is {state}", cursor=context.cursor)
        after = state.get("after", "")
        known = set(context.instance.get_dynamic_partitions(options.partitions_name(mirror)))
        scan = scan_branches(
            service,
            found,
            known_partitions=known,
            after=after,
            max_requests=max_requests,
            budget_seconds=budget_seconds,
            options=options,
        )
        dynamic: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
        if scan.add:
            dynamic.append(partitions.build_add_request(scan.add))
        if scan.delete:
            dynamic.append(partitions.build_delete_request(scan.delete))
        if tags_target is not None:
            tags_request = tags_run_request(service, found, options)
            if tags_request is not None:
                scan.requests.append(tags_request)
        if shared:
            scan.requests = _record_requests(context, service, found, scan.requests, name)
        _observe_source(context, service, found, scan, options)
        fresh = state.get("fresh", "")
        if max_behind_seconds is not None:
            fresh = _report_freshness(context, service, mirror, max_behind_seconds, fresh, options)
        full_at = state.get("full_at", 0.0) if scan.resume_after else time.time()  # an unfinished scan goes on
        cursor = json.dumps({"after": scan.resume_after, "fresh": fresh, "full_at": full_at})
        for entry in woken:  # what the hooks named before this scan, the scan covered
            service.mirrors.ack_wakeups(entry.wakeups)
        context.log.info(
            f"{mirror}: scanned {scan.scanned} branch(es), {len(scan.requests)} run(s) requested, "
            f"{len(scan.add)} partition(s) added, {len(scan.delete)} removed"
            + (f", {len(scan.cooling)} blocked branch(es) in their cooldown" if scan.cooling else "")
            + (f", resuming after {scan.resume_after!r}" if scan.resume_after else "")
            + (", tags differ" if any(r.partition_key is None for r in scan.requests) else "")
        )
        if not scan.requests:
            return dg.SensorResult(
                skip_reason=f"{mirror}: every scanned branch and the tags are in sync"
                + (f", but for {len(scan.cooling)} blocked branch(es) in their cooldown" if scan.cooling else ""),
                dynamic_partitions_requests=dynamic,
                cursor=cursor,
            )
        return dg.SensorResult(run_requests=scan.requests, dynamic_partitions_requests=dynamic, cursor=cursor)

    return commit_sensor


def build_hooks_sensor(
    mirror: str,
    target: SensorTarget,
    *,
    listener: int,
    tags_target: SensorTarget | None = None,
    hooks_interval_seconds: int,
    hooks_wait_seconds: float,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> dg.SensorDefinition:
    """The ``listener``-th (2, 3, ...) sensor waiting for ``mirror``'s hooks beside its commit sensor
    (``hooks.sensor_listeners``): its ticks only wait for wake-ups, claim them and request their runs as the
    commit sensor's hooks ticks do (same keys, each recorded first); it never scans."""
    name = hooks_sensor_name(mirror, listener, options)

    @dg.sensor(
        name=name,
        jobs=[target] + ([tags_target] if tags_target is not None else []),
        minimum_interval_seconds=hooks_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        required_resource_keys={options.resource_key},
        description=f"Waits for lakeFS hooks of mirror {mirror} beside its commit sensor and requests their runs.",
    )
    def hooks_sensor(context: dg.SensorEvaluationContext, **_resources: object) -> dg.SensorResult:
        started = time.monotonic()
        service = options.replication(context).service()
        woken = _listen(service, mirror, name, started, hooks_wait_seconds, claim=True)
        return _woken_result(context, service, woken, options, tags_target is not None, requester=name)

    return hooks_sensor


def _listen(
    service: ReplicationService, mirror: str, sensor: str, start: float, wait: float, *, claim: bool
) -> list[WokenMirror]:
    """A hooks tick's wait for wake-ups (claimed, with ``claim``), from ``start`` (when the tick began,
    ``time.monotonic()``). A tick waits ``wait`` seconds when no other listener of the mirror in this process
    waits across the daemon's next loop, else it returns before that loop starts: so the listeners take turns
    covering the loops' boundaries, the time when a tick that ended is not yet started again."""
    with _LISTENING_LOCK:
        waits = _LISTENING.setdefault(mirror, {})
        # another listener waits past the next loop's start (ticks of one loop start within a few tenths of a
        # second of each other, those of the next loop 5 s later: half a loop of slack either way)
        covered = any(until >= start + DAEMON_LOOP_SECONDS for other, until in waits.items() if other != sensor)
        if covered:
            wait = min(wait, DAEMON_LOOP_SECONDS - LOOP_MARGIN_SECONDS)
        waits[sensor] = start + wait
    try:
        return wait_woken(service, start + wait, name=mirror, claim=claim)
    finally:
        with _LISTENING_LOCK:
            _LISTENING.get(mirror, {}).pop(sensor, None)


def _record_requests(
    context: dg.SensorEvaluationContext,
    service: ReplicationService,
    mirror: Mirror,
    requests: Sequence[dg.RunRequest],
    requester: str,
) -> list[dg.RunRequest]:
    """The run requests this sensor may make: each key recorded for its ref (``request_run``) unless another
    sensor of the mirror recorded it first or already has a run with it (a recorded key lapses after
    ``LOST_REQUEST``, when its tick died before Dagster got it, and the record is then taken over)."""
    now = dt.datetime.now(dt.UTC)
    kept: list[dg.RunRequest] = []
    for request in requests:
        key = request.run_key or ""
        runs = context.instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: key}), limit=10) if key else []
        if any(run.tags.get(SENSOR_NAME_TAG) != requester for run in runs):
            continue  # another sensor of the mirror already has this run
        kind, ref = ("branch", request.partition_key) if request.partition_key is not None else ("tag", "*")
        if service.mirrors.request_run(mirror.id, kind, ref, key, requester, now, lost_before=now - LOST_REQUEST):
            kept.append(request)
    if len(kept) < len(requests):
        context.log.info(f"{mirror.name}: {len(requests) - len(kept)} run(s) already requested by another sensor")
    return kept


def _observe_source(
    context: dg.SensorEvaluationContext,
    service: ReplicationService,
    mirror: Mirror,
    scan: BranchScan,
    options: MirrorDefsOptions,
) -> None:
    """Record on the source asset where its branches moved (with a link to each commit in the lakeFS UI), so the
    lineage shows what upstream change each mirror run follows."""
    if not scan.source_heads:
        return
    endpoint = service.config.endpoint_for(mirror.source_region)
    context.instance.report_runless_asset_event(
        dg.AssetObservation(
            asset_key=options.source_key(mirror.name),
            metadata={
                "source_repository": mirror.source_repository,
                "branches_moved": len(scan.source_heads),
                **{
                    f"branch {branch}": dg.MetadataValue.url(commit_url(endpoint, mirror.source_repository, commit))
                    for branch, commit in sorted(scan.source_heads.items())[:MAX_OBSERVED_BRANCHES]
                },
            },
        )
    )


def _woken_result(
    context: dg.SensorEvaluationContext,
    service: ReplicationService,
    woken: list[WokenMirror],
    options: MirrorDefsOptions,
    with_tags: bool,
    *,
    requester: str | None = None,
) -> dg.SensorResult:
    """A hooks tick: runs for the branches (and the tags) the queued wake-ups name, which are then acknowledged
    (with ``requester``, the sensor's name, only the run keys it could record: ``_record_requests``)."""
    if not woken:
        return dg.SensorResult(skip_reason="no lakeFS hook since the last tick", cursor=context.cursor)
    entry = woken[0]  # read_woken(name=...) returns this mirror alone
    scan = BranchScan()
    if entry.mirror.state == MirrorState.ACTIVE:
        known = set(context.instance.get_dynamic_partitions(options.partitions_name(entry.mirror.name)))
        scan = scan_woken(service, entry.mirror, entry.branches, known_partitions=known, options=options)
        if with_tags and entry.tags:
            tags_request = tags_run_request(service, entry.mirror, options)
            if tags_request is not None:
                scan.requests.append(tags_request)
        if requester is not None:
            scan.requests = _record_requests(context, service, entry.mirror, scan.requests, requester)
    service.mirrors.ack_wakeups(entry.wakeups)
    context.log.info(
        f"{entry.mirror.name}: {len(entry.wakeups)} hook wake-up(s), {len(scan.requests)} run(s) requested"
        + (f", {len(scan.cooling)} blocked branch(es) in their cooldown" if scan.cooling else "")
    )
    partitions = branch_partitions(woken[0].mirror.name, options)
    dynamic = [partitions.build_add_request(scan.add)] if scan.add else []
    if not scan.requests:
        return dg.SensorResult(
            skip_reason=f"{entry.mirror.name}: the woken refs are in sync",
            dynamic_partitions_requests=dynamic,
            cursor=context.cursor,
        )
    return dg.SensorResult(run_requests=scan.requests, dynamic_partitions_requests=dynamic, cursor=context.cursor)


def _report_freshness(
    context: dg.SensorEvaluationContext,
    service: ReplicationService,
    mirror: str,
    max_behind: float,
    last: str,
    options: MirrorDefsOptions,
) -> str:
    """Report the ``fresh`` check when its outcome changed since ``last``, or while it fails (its lag values
    then plot over time); returns the outcome to keep in the cursor."""
    from .freshness import fresh_evaluation, outcome_key

    evaluation = fresh_evaluation(service, mirror, max_behind, options)
    outcome = outcome_key(evaluation)
    if outcome != last or not evaluation.passed:
        context.instance.report_runless_asset_event(evaluation)
    return outcome
