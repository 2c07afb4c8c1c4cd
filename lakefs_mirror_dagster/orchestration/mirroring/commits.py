"""Per-mirror commit sensor: finds branches (and tags) that differ from the mirror and requests runs.

Each tick scans the mirror's branches and tags (``branch_scan.py``: what differs, the run keys, where the next
tick resumes), keeps the branch partitions in step and requests the runs. With hooks, it ticks between its
scans for queued wake-ups, beside the mirror's other listeners (``hook_listeners.py``).
"""

import json
import time

import dagster as dg

from ...mirrors import Mirror, MirrorState
from ...region import ReplicationService, WokenMirror, read_woken
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from .branch_heads import branch_partitions, commit_url
from .branch_scan import MAX_REQUESTS_PER_TICK, TICK_BUDGET_SECONDS, BranchScan, scan_branches, tags_run_request
from .hook_listeners import SensorTarget, listen, record_requests, woken_result

__all__ = ["build_commit_sensor", "commit_sensor_name"]

#: How many moved branches one observation of the source asset links to.
MAX_OBSERVED_BRANCHES = 50


def commit_sensor_name(mirror: str, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> str:
    return options.name(f"{mirror.replace('-', '_')}_commits")


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
    and every run key recorded first (``hook_listeners.py``)."""
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
                woken = listen(service, mirror, name, started, hooks_wait_seconds, claim=shared)
                return woken_result(
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
            scan.requests = record_requests(context, service, found, scan.requests, name)
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
