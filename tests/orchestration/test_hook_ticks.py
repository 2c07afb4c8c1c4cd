"""Under Dagster with ``hooks.enabled``: the commit sensor ticks every second, a tick without a queued hook reads
the queue only and requests nothing, a hook's wake-up gets its ref a run at once with the same run key a full
scan gives (one sensor, so never a second run), and the full scan still runs at its own interval. With
``hooks.sensor_wait`` a tick that finds the queue empty waits for a hook that comes while it runs."""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta

import dagster as dg
import pytest

from lakefs_mirror_dagster.orchestration.mirroring import MANAGER_SENSOR_NAME, commit_sensor_name, run_key
from lakefs_mirror_dagster.region import HookEvent, queue_hook_event
from tests.service.test_hooks_live import with_hooks

from .conftest import isolated_case
from .test_replication_flow import _tick

pytestmark = pytest.mark.integration


def test_hook_wakeups_get_runs_within_a_tick_and_polling_stays_the_fallback(
    lakefs_env, isolated_regions, unique_name, instance: dg.DagsterInstance
) -> None:
    hourly = {"commit_sensor": {"process_branches_duration": "1h"}}
    path = with_hooks(isolated_regions, "region-b", enabled=True, extra=hourly)
    case = isolated_case(lakefs_env, isolated_regions, unique_name, "hooked", path)
    repo, mirror, src, src_svc, dst_svc = case.repo, case.mirror, case.src, case.src_service, case.service
    first = case.commit("main", {"tables/t/part-0.parquet": 100}, "first")
    defs = case.definitions()
    sensor_name = commit_sensor_name(mirror.name)
    assert defs.resolve_sensor_def(sensor_name).minimum_interval_seconds == 1
    _tick(defs, MANAGER_SENSOR_NAME, instance)  # creates the mirror repository

    full = _tick(defs, sensor_name, instance)  # no full scan yet: this tick is one
    assert [r.run_key for r in full.run_requests or []] == [run_key(mirror.name, "main", first, None)]
    cursor = full.cursor
    second = case.commit("main", {"tables/t/part-1.parquet": 100}, "second")
    quiet = _tick(defs, sensor_name, instance, cursor)
    assert not quiet.run_requests and "no lakeFS hook" in str(quiet.skip_reason)  # polling is an hour away

    queue_hook_event(src_svc, HookEvent("post-commit", repo, branch_id="main"))
    src.create_tag(repo, "v1", second)
    queue_hook_event(src_svc, HookEvent("post-create-tag", repo, tag_id="v1"))
    woken = _tick(defs, sensor_name, instance, cursor)
    keys = sorted(r.run_key for r in woken.run_requests or [])
    assert keys[0] == run_key(mirror.name, "main", second, None), keys  # the key a full scan would give
    assert keys[1].startswith(f"{mirror.name}/tags/"), keys
    assert dst_svc.mirrors.wakeups("region-b") == []  # acknowledged
    assert not _tick(defs, sensor_name, instance, cursor).run_requests

    # hooks.sensor_wait: a tick that found nothing keeps reading the queue, so a hook queued while it runs (here
    # 3 s in; the tick would wait up to 30 s) gets its run from that tick, not from one 5 s later.
    third = case.commit("main", {"tables/t/part-2.parquet": 100}, "third")
    hooks = dataclasses.replace(case.config.hooks, sensor_wait=timedelta(seconds=30))
    waiting = case.definitions(config=dataclasses.replace(case.config, hooks=hooks))
    later = threading.Timer(3.0, queue_hook_event, (src_svc, HookEvent("post-commit", repo, branch_id="main")))
    later.start()
    try:
        caught = _tick(waiting, sensor_name, instance, cursor)
    finally:
        later.join()
    assert [r.run_key for r in caught.run_requests or []] == [run_key(mirror.name, "main", third, None)]
    assert dst_svc.mirrors.wakeups("region-b") == []
