"""Under Dagster, a branch whose run was blocked gets a retry run once its cooldown has passed, though no
head moved: none before, then one run key per retry (``.../retry-<n>``), and that run advances the branch."""

from __future__ import annotations

import datetime as dt
import time
from urllib.parse import urlsplit

import dagster as dg
import pytest
from lakefs_mirror_devenv.demo.converge import run_until_converged

from lakefs_mirror_dagster.orchestration.mirroring import MANAGER_SENSOR_NAME, commit_sensor_name, run_key

from ..replication.test_retry_schedule import with_cooldowns
from .conftest import content, isolated_case
from .test_tags import _tick

pytestmark = pytest.mark.integration


def test_sensor_retries_a_blocked_branch_after_its_cooldown(
    lakefs_env, isolated_regions, unique_name, instance: dg.DagsterInstance
) -> None:
    config_path = isolated_regions[0]
    # long enough that a loaded machine's first runs end inside it (the test then waits it out)
    path = with_cooldowns(config_path("region-b"), on_missing="10s")
    case = isolated_case(lakefs_env, isolated_regions, unique_name, "retry", path)
    repo, mirror, src, dst_svc = case.repo, case.mirror, case.src, case.service
    case.commit("main", {"tables/t/part-0.parquet": 100}, "first")
    case.src.create_branch(repo, "bad", "main")
    bad_head = case.commit("bad", {"tables/rot/part-0.parquet": 3000}, "an object that will rot")
    physical = urlsplit(src.stat_object(repo, "bad", "tables/rot/part-0.parquet").physical_address)
    s3, key = lakefs_env.minio["minio-a"].s3_client(), physical.path.lstrip("/")
    rotten = bytearray(content("tables/rot/part-0.parquet", 3000))
    rotten[10] ^= 0xFF
    s3.put_object(Bucket=physical.netloc, Key=key, Body=bytes(rotten))

    defs = case.definitions()
    _tick(defs, MANAGER_SENSOR_NAME, instance)
    first = run_until_converged(instance, defs, max_rounds=3, timeout_seconds=120)
    assert [r.branch for r in first.failed] == ["bad"], first.runs
    s3.put_object(Bucket=physical.netloc, Key=key, Body=content("tables/rot/part-0.parquet", 3000))  # repaired

    sensor = commit_sensor_name(mirror.name)
    cooling = _tick(defs, sensor, instance)
    assert not [r for r in cooling.run_requests or [] if r.partition_key == "bad"], "retried within the cooldown"
    block = dst_svc.mirrors.get_branch(mirror.id, "bad")
    assert block is not None and block.retry_after is not None and block.blocked_attempts == 1, block
    time.sleep(max(0.0, (block.retry_after - dt.datetime.now(dt.UTC)).total_seconds() + 0.1))

    retry_keys = [[r.run_key for r in _tick(defs, sensor, instance).run_requests or []] for _ in range(2)]
    expected = run_key(mirror.name, "bad", bad_head, None, retry=1)
    assert retry_keys == [[expected], [expected]], "one key per retry, the same on every tick until it runs"

    second = run_until_converged(instance, defs, max_rounds=3, timeout_seconds=120)
    assert [(r.branch, r.run_key, r.success) for r in second.runs] == [("bad", expected, True)], second.runs
    assert case.dst.get_branch_head(mirror.name, "bad") == bad_head
    cleared = dst_svc.mirrors.get_branch(mirror.id, "bad")
    assert cleared is not None and cleared.blocked_commit_id is None, cleared
