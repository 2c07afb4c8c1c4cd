"""The sensors that wait for a mirror's lakeFS hooks beside its commit sensor, and how their ticks take turns.

With ``hooks.enabled`` the commit sensor ticks between its scans for the refs hooks queued; with
``hooks.sensor_listeners`` above 1, more sensors listen beside it (details on ``hooks_sensor_name``). Listeners
claim wake-ups (exactly one tick takes each), and every run key is first recorded per (mirror, ref) before it
is requested, since Dagster deduplicates run keys per sensor only.
"""

import datetime as dt
import threading
import time
from collections.abc import Sequence
from typing import Any

import dagster as dg

from ...mirrors import Mirror, MirrorState
from ...mirrors.wakeups import LOST_REQUEST
from ...region import ReplicationService, WokenMirror, wait_woken
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from .branch_heads import branch_partitions
from .branch_scan import BranchScan, scan_woken, tags_run_request

__all__ = [
    "DAEMON_LOOP_SECONDS",
    "LOOP_MARGIN_SECONDS",
    "SensorTarget",
    "build_hooks_sensor",
    "hooks_sensor_name",
    "listen",
    "record_requests",
    "woken_result",
]

#: What a commit sensor launches: the mirror's in-process jobs (``mirroring_definitions``) or its assets.
SensorTarget = Any
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


def hooks_sensor_name(mirror: str, listener: int, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> str:
    """The ``listener``-th (2, 3, ...) sensor that waits for ``mirror``'s hooks (the commit sensor is the first).

    With ``hooks.enabled`` the commit sensor also ticks every second between its scans for the refs hooks queued
    (``region/hooks.py``), waiting up to ``hooks.sensor_wait`` for one. Dagster starts a sensor's tick at most
    once per daemon loop (5 s) and never while its last tick runs, so one sensor that found a hook leaves nobody
    listening until the next loop: with ``hooks.sensor_listeners`` above 1 these sensors wait beside it, claim
    wake-ups (exactly one tick takes each) and take turns waiting across the next loop.
    """
    return options.name(f"{mirror.replace('-', '_')}_hooks_{listener}")


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
        woken = listen(service, mirror, name, started, hooks_wait_seconds, claim=True)
        return woken_result(context, service, woken, options, tags_target is not None, requester=name)

    return hooks_sensor


def listen(
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


def record_requests(
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


def woken_result(
    context: dg.SensorEvaluationContext,
    service: ReplicationService,
    woken: list[WokenMirror],
    options: MirrorDefsOptions,
    with_tags: bool,
    *,
    requester: str | None = None,
) -> dg.SensorResult:
    """A hooks tick: runs for the branches (and the tags) the queued wake-ups name, which are then acknowledged
    (with ``requester``, the sensor's name, only the run keys it could record: ``record_requests``)."""
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
            scan.requests = record_requests(context, service, entry.mirror, scan.requests, requester)
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
