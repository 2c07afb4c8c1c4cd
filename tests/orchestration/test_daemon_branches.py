"""A mirror of a repository with many branches converges under the real Dagster daemon, runs in parallel.

``dagster-daemon run -w workspace.yaml`` with the settings README's "Dagster in production" recommends (a queued run
coordinator capped at ``MAX_CONCURRENT_RUNS``, the sensor daemon on threads submitting a tick's runs in parallel,
and ``ForkRunLauncher``: each run a fork of a warm process) is all that runs: the commit sensor requests a run
per branch, the queue launches them. Every branch must be materialized exactly once, for its source head; no
two runs may carry the same run key or be requested for the same branch and source commit, even though the
sensor keeps ticking (every 2 s) while runs are queued and in flight. ``benchmarks/dagster_branches.py`` runs
the same with 200 branches.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.branch_fanout import fan_out_branches
from lakefs_mirror_devenv.dagster_convergence import converge_mirror

from lakefs_mirror_dagster.region import ReplicationService

from .conftest import daemon_mirror, gateway_source

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MAX_CONCURRENT_RUNS = 4
TIMEOUT_S = 900.0


@pytest.mark.parametrize("branches", [6])
def test_many_branches_converge_under_the_daemon_with_runs_in_parallel_and_no_duplicate(
    branches: int,
    lakefs_env: Environment,
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    service = isolated_regions[1]
    repo, name = unique_name("fanout"), unique_name("fanout-mirror")
    src, gateway = gateway_source(lakefs_env, service, repo)
    gateway.put_object(Bucket=repo, Key="main/tables/t/part-0.json", Body=b'{"row": 0}')
    main = src.commit(repo, "main", "first").id
    heads = {"main": main, **fan_out_branches(src, gateway, repo, [f"b{i:03}" for i in range(branches)])}
    config = daemon_mirror(lakefs_env, isolated_regions, repo, name, tmp_path / "daemon-region-b.yaml")

    result = converge_mirror(
        tmp_path / "dagster_home",
        workspace=ROOT / "workspace.yaml",
        replication_config=config,
        mirror=name,
        source=src,
        source_repository=repo,
        destination=service("region-b").client("region-b"),
        max_concurrent_runs=MAX_CONCURRENT_RUNS,
        timeout_s=TIMEOUT_S,
        settle_s=5.0,
        sensor_workers=MAX_CONCURRENT_RUNS,
        fork_runs=True,
    )

    audit = result.audit
    log = tmp_path / "dagster_home" / "dagster-daemon.log"
    assert result.converged, f"not converged in {TIMEOUT_S:.0f}s, lagging {result.lagging[:10]}; see {log}"
    assert audit.duplicate_run_keys == [] and audit.duplicate_requests == []
    assert (audit.runs, audit.succeeded) == (len(heads), len(heads))  # one run per branch, each succeeded
    assert dict(audit.requested) == {f"{b}@{h}": 1 for b, h in heads.items()}  # per the runs' tags
    # Each run executes the blocking check only; the sensor evaluates `fresh` (it reads every branch) itself.
    assert dict(audit.checks) == {"ranges_validated": len(heads)}
    assert dict(audit.materialized) == dict.fromkeys(heads, 1)
    assert audit.materialized_commits == heads
    # The queue ran several at once, never more than its limit.
    assert 2 <= audit.max_parallel <= MAX_CONCURRENT_RUNS, audit.max_parallel
    # Ticks kept coming while runs were queued or running; they asked again and got no second run.
    assert audit.rerequested_in_flight >= 1, audit
