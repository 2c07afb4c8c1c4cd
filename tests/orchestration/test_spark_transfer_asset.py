"""With ``spark.transfer_enabled``, a branch-heads run copies a big enough batch in Spark tasks and says so."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.orchestration.definitions import build_definitions
from lakefs_mirror_dagster.orchestration.mirroring import (
    branch_partitions_name,
    build_branch_heads_asset,
    mirror_asset_key,
)
from tests.replication.conftest import assert_mirror_equals_source

from .conftest import MirrorCase


def test_branch_run_transfers_on_spark_above_the_threshold(mirror_case: MirrorCase, instance, tmp_path: Path) -> None:
    case, name = mirror_case, mirror_case.mirror.name
    case.commit("main", {f"tables/big/part-{i}.parquet": 50 + i for i in range(12)}, "a bigger commit")
    raw = yaml.safe_load(case.config_path.read_text())
    raw["spark"] = {**raw.get("spark", {}), "transfer_enabled": True, "transfer_threshold_objects": 10}
    path = tmp_path / "replication-spark.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    config = load_config(path, env={})
    defs = build_definitions([name], config=config, config_path=str(path), reload=None)
    case.service.activate(case.mirror)
    instance.add_dynamic_partitions(branch_partitions_name(name), ["main"])

    run = dg.materialize(
        [build_branch_heads_asset(name)],
        instance=instance,
        partition_key="main",
        resources=dict(defs.resources or {}),
        raise_on_error=False,
    )
    assert run.success
    # Two ranges to validate, below the default validation_threshold_ranges (16): checked without Spark.
    [check] = run.get_asset_check_evaluations()
    assert check.passed and check.metadata["validated_on"].value == "in_process"
    event = instance.get_latest_materialization_event(mirror_asset_key(name))
    assert event is not None and event.asset_materialization is not None
    metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    # The first commit's 3 objects stay in-process; the second commit's range (15 objects >= 10) goes to Spark.
    assert metadata["transfer_path"] == "in_process+spark"
    assert metadata["objects"] == 15
    assert_mirror_equals_source(case.src, case.repo, case.dst, name)
