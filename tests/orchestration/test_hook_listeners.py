"""Under Dagster with ``hooks.sensor_listeners: 2``: the commit sensor and a hooks sensor both wait for hooks.
Dagster starts a sensor's tick at most once per daemon loop and never while its last tick runs, so with one
listener a hook that comes after another in the same loop waits for the next loop; with two, the tick that did
not take the first hook takes the second. Ticks racing on one wake-up: exactly one claims it and requests the
run. A run key one sensor requested is never requested by the other (Dagster deduplicates run keys per sensor
only), the full scan included, and the full scan still finds what no hook named."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from datetime import timedelta

import dagster as dg
import pytest

from lakefs_mirror_dagster.orchestration.mirroring import (
    MANAGER_SENSOR_NAME,
    commit_sensor_name,
    hooks_sensor_name,
    run_key,
)
from lakefs_mirror_dagster.region import HookEvent, queue_hook_event
from tests.service.test_hooks_live import with_hooks

from .conftest import isolated_case
from .test_replication_flow import _tick

pytestmark = pytest.mark.integration


def _together(*ticks: Callable[[], dg.SensorResult]) -> list[dg.SensorResult]:
    """Run the ticks at the same time (as the daemon's sensor threads do); their results in order."""
    results: list[dg.SensorResult | BaseException | None] = [None] * len(ticks)

    def run(i: int) -> None:
        try:
            results[i] = ticks[i]()
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(ticks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return [r for r in results if isinstance(r, dg.SensorResult)]


def _keys(result: dg.SensorResult) -> list[str]:
    return sorted(r.run_key or "" for r in result.run_requests or [])


def test_two_listeners_serve_two_hooks_in_one_loop_and_never_request_a_run_key_twice(
    lakefs_env, isolated_regions, unique_name, instance: dg.DagsterInstance
) -> None:
    hourly = {"commit_sensor": {"process_branches_duration": "1h"}}
    path = with_hooks(isolated_regions, "region-b", enabled=True, sensor_wait="5s", sensor_listeners=2, extra=hourly)
    case = isolated_case(lakefs_env, isolated_regions, unique_name, "listened", path)
    repo, mirror, src, src_svc, dst_svc = case.repo, case.mirror, case.src, case.src_service, case.service
    case.commit("main", {"tables/t/part-0.parquet": 100}, "first")
    src.create_branch(repo, "dev", "main")
    defs = case.definitions()
    commits, listener = commit_sensor_name(mirror.name), hooks_sensor_name(mirror.name, 2)
    assert defs.resolve_sensor_def(listener).minimum_interval_seconds == 1
    _tick(defs, MANAGER_SENSOR_NAME, instance)  # creates the mirror repository
    cursor = _tick(defs, commits, instance).cursor  # the first full scan

    # Two hooks 1 s apart while both sensors' ticks wait (one daemon loop): each tick takes one, so both
    # changes get their runs in this loop; with one listener the second would wait for the next loop.
    main2 = case.commit("main", {"tables/t/part-1.parquet": 100}, "second")
    dev2 = case.commit("dev", {"tables/t/part-2.parquet": 100}, "dev second")
    hooks = [
        threading.Timer(1.0, queue_hook_event, (src_svc, HookEvent("post-commit", repo, branch_id="main"))),
        threading.Timer(2.0, queue_hook_event, (src_svc, HookEvent("post-commit", repo, branch_id="dev"))),
    ]
    for timer in hooks:
        timer.start()
    try:
        both = _together(lambda: _tick(defs, commits, instance, cursor), lambda: _tick(defs, listener, instance))
    finally:
        for timer in hooks:
            timer.join()
    assert [len(_keys(r)) for r in both] == [1, 1], [_keys(r) for r in both]
    assert sorted(_keys(both[0]) + _keys(both[1])) == sorted(
        [run_key(mirror.name, "main", main2, None), run_key(mirror.name, "dev", dev2, None)]
    )
    assert dst_svc.mirrors.wakeups("region-b") == []

    # Both ticks race on one wake-up (it was queued before either read the queue): one claims it and asks for
    # the run, the other finds nothing to take.
    main3 = case.commit("main", {"tables/t/part-3.parquet": 100}, "third")
    queue_hook_event(src_svc, HookEvent("post-commit", repo, branch_id="main"))
    quick = dataclasses.replace(case.config, hooks=dataclasses.replace(case.config.hooks, sensor_wait=timedelta(0)))
    racing = case.definitions(config=quick)
    raced = _together(lambda: _tick(racing, commits, instance, cursor), lambda: _tick(racing, listener, instance))
    assert sorted(_keys(raced[0]) + _keys(raced[1])) == [run_key(mirror.name, "main", main3, None)]
    by_listener = _keys(raced[1])
    assert dst_svc.mirrors.wakeups("region-b") == []

    # The same change seen again by the other sensor (a hook queued again, or the full scan): no second
    # request of the key. The full scan still requests what no hook named.
    queue_hook_event(src_svc, HookEvent("post-commit", repo, branch_id="main"))
    other = commits if by_listener else listener
    again = _tick(racing, other, instance, cursor if other == commits else None)
    assert _keys(again) == [] and dst_svc.mirrors.wakeups("region-b") == []
    dev3 = case.commit("dev", {"tables/t/part-4.parquet": 100}, "dev third")  # no hook
    full = _tick(racing, commits, instance)  # no cursor: a full scan is due
    expected = [run_key(mirror.name, "dev", dev3, None)]
    if not by_listener:  # the commit sensor requested main3 itself: Dagster skips its own key in the daemon
        expected.append(run_key(mirror.name, "main", main3, None))
    assert _keys(full) == sorted(expected)
