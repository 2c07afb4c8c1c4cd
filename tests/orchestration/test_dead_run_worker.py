"""A run whose worker dies without a word is failed and run again under the real daemon; the branch converges.

``ForkRunLauncher`` answers Dagster's run monitoring, so with README's ``run_monitoring`` and ``run_retries``
(``retry_on_asset_or_op_failure: false``) in ``dagster.yaml`` a worker SIGKILLed mid-copy (held at its second
object by the failpoint ``after_object_copy:2:hold=<file>`` until then) does not leave its run STARTED for ever,
holding a slot of the run queue while its branch waits for a next source commit that may never come: the
monitoring daemon fails the run, the retry daemon runs it again, and the mirror reaches the source head, its
objects readable through the mirror's S3 gateway.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.dagster_daemon import dagster_daemon, write_instance_config

from lakefs_mirror_dagster.orchestration.launcher import RUN_WORKER_PID_TAG
from lakefs_mirror_dagster.orchestration.mirroring import MIRROR_TAG
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication.failpoints import held_marker
from lakefs_mirror_dagster.replication.heads import branch_heads

from .conftest import daemon_mirror, gateway_source

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300.0
OBJECTS = {f"tables/t/part-{i}.json": f'{{"row": {i}}}'.encode() for i in range(3)}


def test_a_run_whose_worker_died_is_failed_and_run_again_until_the_branch_converges(
    lakefs_env: Environment,
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    service = isolated_regions[1]
    repo, name = unique_name("dead-worker"), unique_name("dead-worker-mirror")
    src, gateway = gateway_source(lakefs_env, service, repo)
    for key, body in OBJECTS.items():
        gateway.put_object(Bucket=repo, Key=f"main/{key}", Body=body)
    head = src.commit(repo, "main", "three objects").id
    config = daemon_mirror(lakefs_env, isolated_regions, repo, name, tmp_path / "daemon-region-b.yaml")
    home = tmp_path / "dagster_home"
    write_instance_config(
        home, max_concurrent_runs=2, dequeue_interval_seconds=1, sensor_workers=2, fork_runs=True,
        recover_dead_runs=True,
    )  # fmt: skip
    destination = service("region-b").client("region-b")
    log = home / "dagster-daemon.log"
    release = tmp_path / "release-hold"

    # The instance's storage is created before the daemon starts: processes creating it at once can race
    # (alembic then finds two heads and the code location fails to load).
    with (
        dg.DagsterInstance.from_config(str(home)) as instance,
        dagster_daemon(
            home,
            workspace=ROOT / "workspace.yaml",
            replication_config=config,
            log_path=log,
            env={"LAKEFS_MIRROR_FAILPOINT": f"after_object_copy:2:hold={release}"},  # each worker, at its 2nd object
        ) as alive,
    ):
        deadline = time.monotonic() + TIMEOUT_S
        runs: list[dg.DagsterRun] = []
        while time.monotonic() < deadline and alive() and not any(RUN_WORKER_PID_TAG in r.tags for r in runs):
            runs = list(instance.get_runs(filters=dg.RunsFilter(tags={MIRROR_TAG: name})))
            time.sleep(0.5)
        [first] = runs
        while time.monotonic() < deadline and alive() and not held_marker(release).exists():
            time.sleep(0.2)  # until the worker has copied its first two objects and is held after the second
        assert held_marker(release).exists(), f"the run's worker never reached its second object copy; see {log}"
        os.kill(int(first.tags[RUN_WORKER_PID_TAG]), signal.SIGKILL)  # it cannot have finished: it is held
        release.touch()  # the retry's worker passes the failpoint
        while time.monotonic() < deadline and alive():
            runs = list(instance.get_runs(filters=dg.RunsFilter(tags={MIRROR_TAG: name})))
            at_head = branch_heads(destination, name, page_size=100, missing_ok=True).get("main") == head
            if at_head and runs and all(r.is_finished for r in runs):
                break
            time.sleep(1.0)
        assert alive(), f"dagster-daemon died; see {log}"

        by_status = {r.run_id: r.status for r in runs}
        failed = [r for r in runs if r.status == dg.DagsterRunStatus.FAILURE]
        assert [r.run_id for r in failed] == [first.run_id], f"runs: {by_status}; see {log}"
        events = [e.message for e in instance.all_logs(failed[0].run_id)]
        assert any("is gone" in m for m in events), events[-5:]  # failed by run monitoring, not by a step
        retries = [r for r in runs if r.tags.get("dagster/parent_run_id") == failed[0].run_id]
        assert [r.status for r in retries] == [dg.DagsterRunStatus.SUCCESS], f"runs: {by_status}; see {log}"
        assert len(runs) == 2  # the sensor asked for no other run: the retry, not a new request, converged it
        [materialized] = [
            e.asset_materialization for e in instance.all_logs(retries[0].run_id) if e.asset_materialization
        ]
        figures = {k: v.value for k, v in materialized.metadata.items()}
        # what the killed worker had copied (two objects, it was held after its second) was found, not copied again
        assert figures["objects_already_present"] >= 2 and figures["objects"] + figures["objects_already_present"] == 3

    assert destination.get_branch_head(name, "main") == head
    mirrored = lakefs_env.region("region-b").s3_gateway_client()
    for key, body in OBJECTS.items():
        assert mirrored.get_object(Bucket=name, Key=f"main/{key}")["Body"].read() == body
