"""A backfill of every branch partition, launched as Dagster's UI launches it, is ONE run under the real daemon.

A webserver and ``dagster-daemon run -w workspace.yaml`` share a throwaway instance. The mirror's commit sensor
is stopped through the webserver before the daemon starts (and would scan only hourly anyway), so the backfill
is the only thing that creates runs. The branch partitions are added, then the webserver's
``launchPartitionBackfill`` (the UI's "Materialize" dialog) asks for all of them; Dagster's backfill daemon
turns that into runs per the asset's ``BackfillPolicy.single_run``. ``benchmarks/dagster_branches.py --mode
backfill`` runs the same with 200 branches against ``lakefs-mirror sync --once``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.branch_fanout import fan_out_branches
from lakefs_mirror_devenv.dagster_convergence import backfill_mirror

from lakefs_mirror_dagster.orchestration.definitions import DEFAULT_LOCATION_NAME
from lakefs_mirror_dagster.region import ReplicationService
from tests.replication.conftest import assert_mirror_equals_source

from .conftest import daemon_mirror, gateway_source

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300.0


def test_a_ui_backfill_of_every_branch_is_one_run_that_mirrors_them_all(
    lakefs_env: Environment,
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    service = isolated_regions[1]
    repo, name = unique_name("bfsrc"), unique_name("bf-mirror")
    src, gateway = gateway_source(lakefs_env, service, repo)
    gateway.put_object(Bucket=repo, Key="main/tables/t/part-0.json", Body=b'{"row": 0}')
    heads = {"main": src.commit(repo, "main", "first").id}
    heads |= fan_out_branches(src, gateway, repo, [f"b{i:02}" for i in range(6)])
    config = daemon_mirror(lakefs_env, isolated_regions, repo, name, tmp_path / "region-b.yaml", sensor_interval="1h")
    dst = service("region-b").client("region-b")

    home = tmp_path / "dagster_home"
    result = backfill_mirror(
        home,
        workspace=ROOT / "workspace.yaml",
        replication_config=config,
        location=DEFAULT_LOCATION_NAME,
        mirror=name,
        source=src,
        source_repository=repo,
        destination=dst,
        timeout_s=TIMEOUT_S,
    )

    logs = f"see {home / 'dagster-daemon.log'} and {home / 'dagster-webserver.log'}"
    assert result.status == "COMPLETED_SUCCESS", f"backfill {result.backfill_id} is {result.status}; {logs}"
    assert len(result.backfill_runs) == 1, result.backfill_runs  # all seven branches in one run...
    assert result.runs == 1 and result.sensor_ticks == 0  # ...and nothing else ran: the sensor was stopped
    audit = result.audit
    assert dict(audit.materialized) == dict.fromkeys(heads, 1)  # each branch materialized once...
    assert audit.materialized_commits == heads  # ...for its source head
    assert result.lagging == []
    assert_mirror_equals_source(src, repo, dst, name)
    # The run's log says it synced every branch in one step, with the engine's progress up to the last branch.
    assert any(f"{name}/{len(heads)} branches: sync started" in line for line in result.log_lines), result.log_lines
    progress = [line for line in result.log_lines if line.startswith(f"progress: mirror {name}:")]
    assert any(f"{len(heads)} ref(s) done" in line for line in progress), progress
