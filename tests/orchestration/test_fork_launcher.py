"""``ForkRunLauncher`` on a real Dagster instance (``dagster.yaml``'s ``run_launcher``): a launched run executes in a
forked worker, not in the launching process, and succeeds with its events in the instance; terminating a run in
flight cancels it; a worker killed without a word is reported to Dagster's run monitoring. (The daemon tests,
``test_daemon_branches.py`` and ``test_dead_run_worker.py``, run the launcher under ``dagster-daemon``.)"""

import os
import signal
import time

import dagster as dg
from dagster._core.launcher import WorkerStatus

from lakefs_mirror_dagster.orchestration.launcher import (
    FORK_RUN_LAUNCHER,
    RUN_WORKER_PID_TAG,
    RUN_WORKER_START_TAG,
    ForkRunLauncher,
    process_start,
)

DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@dg.op
def greet(context: dg.OpExecutionContext) -> None:
    context.log.info(f"hello from pid {os.getpid()}")


@dg.job(executor_def=dg.in_process_executor)
def greeting() -> None:
    greet()


@dg.op
def nap() -> None:
    for _ in range(1200):  # 60 s at most; the test terminates it long before
        time.sleep(0.05)


@dg.job(executor_def=dg.in_process_executor)
def napping() -> None:
    nap()


def _launch(instance: dg.DagsterInstance, job: dg.JobDefinition) -> str:
    origin = dg.reconstructable(job).get_python_origin()
    run = instance.create_run_for_job(job_def=job, job_code_origin=origin)
    instance.launch_run(run.run_id, workspace=None)  # type: ignore[arg-type]  # this launcher needs none
    return run.run_id


def _wait(
    instance: dg.DagsterInstance, run_id: str, until: set[dg.DagsterRunStatus], timeout_s: float = 120
) -> dg.DagsterRun:
    run = instance.get_run_by_id(run_id)
    for _ in range(int(timeout_s / 0.2)):
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status in until and RUN_WORKER_PID_TAG in run.tags:
            break
        time.sleep(0.2)
    assert run is not None
    return run


def test_runs_execute_in_forked_workers_and_can_be_terminated() -> None:
    with dg.instance_for_test(overrides={"run_launcher": FORK_RUN_LAUNCHER}) as instance:
        assert isinstance(instance.run_launcher, ForkRunLauncher)

        done = _wait(instance, _launch(instance, greeting), DONE)
        assert done.status == dg.DagsterRunStatus.SUCCESS
        pid = done.tags[RUN_WORKER_PID_TAG]
        assert int(pid) != os.getpid()
        messages = [entry.user_message for entry in instance.all_logs(done.run_id)]
        assert f"hello from pid {pid}" in messages

        running = _wait(instance, _launch(instance, napping), {dg.DagsterRunStatus.STARTED})
        assert running.status == dg.DagsterRunStatus.STARTED
        assert instance.run_launcher.terminate(running.run_id)
        assert _wait(instance, running.run_id, DONE).status == dg.DagsterRunStatus.CANCELED


def test_run_monitoring_learns_of_a_worker_killed_without_a_word() -> None:
    """SIGKILL leaves no event: only the launcher can tell Dagster's run monitoring that the worker is gone, and a
    pid the system gave to another process since is not taken for the worker."""
    with dg.instance_for_test(overrides={"run_launcher": FORK_RUN_LAUNCHER}) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, ForkRunLauncher) and launcher.supports_check_run_worker_health

        running = _wait(instance, _launch(instance, napping), {dg.DagsterRunStatus.STARTED})
        assert running.status == dg.DagsterRunStatus.STARTED
        assert launcher.check_run_worker_health(running).status == WorkerStatus.RUNNING
        pid = int(running.tags[RUN_WORKER_PID_TAG])
        assert running.tags[RUN_WORKER_START_TAG] == process_start(pid)

        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if process_start(pid) is None:
                break
            time.sleep(0.1)
        health = launcher.check_run_worker_health(running)
        assert health.status == WorkerStatus.FAILED and str(pid) in (health.msg or "")
        # the run itself stays STARTED: no worker is left to say otherwise (run monitoring fails it)
        still = instance.get_run_by_id(running.run_id)
        assert still is not None and still.status == dg.DagsterRunStatus.STARTED

        # a live pid that started at another time is another process
        reused = running.with_tags({**running.tags, RUN_WORKER_PID_TAG: str(os.getpid()), RUN_WORKER_START_TAG: "1"})
        assert launcher.check_run_worker_health(reused).status == WorkerStatus.FAILED
        unknown = running.with_tags({k: v for k, v in running.tags.items() if k != RUN_WORKER_PID_TAG})
        assert launcher.check_run_worker_health(unknown).status == WorkerStatus.UNKNOWN
