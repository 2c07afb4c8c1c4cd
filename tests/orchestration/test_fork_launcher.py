"""``ForkRunLauncher`` on a real Dagster instance (``dagster.yaml``'s ``run_launcher``): a launched run executes in a
forked worker, not in the launching process, and succeeds with its events in the instance; terminating a run in
flight cancels it. (The daemon test, ``test_daemon_branches.py``, runs the launcher under ``dagster-daemon``.)"""

import os
import time

import dagster as dg

from lakefs_mirror_dagster.orchestration.launcher import FORK_RUN_LAUNCHER, RUN_WORKER_PID_TAG, ForkRunLauncher

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
