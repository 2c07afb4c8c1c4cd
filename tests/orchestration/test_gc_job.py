"""``gc_deletions_job`` on a real Dagster instance: the first run marks what GC swept at the source, a run after
the grace period deletes it from the mirror, and the run's metadata says what went. The schedule follows
``garbage_collection.cron_schedule`` and starts stopped."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.config import load_config, parse_config
from lakefs_mirror_dagster.orchestration.definitions import build_definitions
from tests.config.config_data import minimal
from tests.replication.gc_case import GcCase, make_gc_case

pytestmark = pytest.mark.integration


@pytest.fixture
def case(lakefs_env: Environment, config_path, tmp_path: Path, unique_name) -> Iterator[GcCase]:  # type: ignore[no-untyped-def]
    c = make_gc_case(lakefs_env, config_path, tmp_path, unique_name, dst_region="region-b")
    yield c
    c.source.close()
    c.destination.close()


def _output_metadata(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    [output] = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_OUTPUT]
    return {k: v.value for k, v in output.step_output_data.metadata.items()}


def test_the_job_deletes_after_the_grace_period_and_says_what_went(case: GcCase, tmp_path: Path) -> None:
    config = load_config(case.config_path, env={})
    defs = build_definitions([], config=config, config_path=str(case.config_path), reload=None)
    job = defs.resolve_job_def("gc_deletions_job")
    run_config = {"ops": {"replicate_gc_deletions": {"config": {"mirror": case.mirror.name}}}}
    before = case.mirror_objects()

    with dg.instance_for_test() as instance:
        first = job.execute_in_process(instance=instance, run_config=run_config)
        assert first.success
        assert _output_metadata(first)["deleted"] == 0
        assert case.mirror_objects() == before

        time.sleep(2.2)  # the case's grace period is 2s
        second = job.execute_in_process(instance=instance, run_config=run_config)
        assert second.success
        metadata = _output_metadata(second)
        assert metadata["deleted"] == 2
        [mirror] = metadata["mirrors"]
        assert sorted(mirror["addresses"]) == sorted(case.collected)
        assert case.mirror_objects() == before - case.collected
        assert instance.get_run_by_id(second.run_id) is not None


def test_the_schedule_uses_the_configured_cron_and_starts_stopped() -> None:
    config = parse_config(minimal(), env={"REPLICATION_GARBAGE_COLLECTION_CRON_SCHEDULE": "15 2 * * 0"})
    schedule = build_definitions([], config=config, reload=None).resolve_schedule_def("gc_deletions_schedule")
    assert schedule.cron_schedule == "15 2 * * 0"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert build_definitions([], reload=None).resolve_schedule_def("gc_deletions_schedule").cron_schedule == "0 3 * * *"
