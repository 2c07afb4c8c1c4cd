"""Validating every range of one commit at the mirror, in-process and on a local Spark, timed."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import _tree  # noqa: F401  (this tree's package first on sys.path, before anything imports it)
from _environment import MIRROR
from _machine import machine_load
from _spark import local_spark

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService

__all__ = [
    "MirrorValidation",
    "validate_at_mirror",
]


@dataclass
class MirrorValidation:
    """Seconds to validate every range of one commit at the mirror, in-process and on a local Spark."""

    ranges: int
    objects: int
    in_process_s: float
    spark_startup_s: float
    #: the first call also starts Spark's Python workers; the second is the steady cost
    spark_s: tuple[float, float]


def validate_at_mirror(
    config: Path, mirror: str, commit_id: str, objects: int, *, spark_partitions: int = 3, validator_workers: int = 3
) -> MirrorValidation:
    """Validate every range of ``commit_id`` at ``mirror``'s storage with ``in_process_validator``, then twice
    with ``SparkRangeValidator`` on ``local[2]``; raises unless all agree and count ``objects`` objects."""
    from lakefs_mirror_dagster.region.service import store_spec
    from lakefs_mirror_dagster.replication import in_process_validator, read_metarange
    from lakefs_mirror_dagster.spark.validation import SparkRangeValidator

    service = ReplicationService(load_config(config, env={}))
    try:
        record = next(service.my_mirrors(name=mirror))
        store = service.destination_store(record.storage_id)
        commit = service.client(MIRROR).get_commit(mirror, commit_id)
        range_ids = read_metarange(store, record.storage_namespace, commit.metarange_id)
        print(f"[validate] commit {commit_id[:12]}: {len(range_ids)} ranges", flush=True)
        validate = in_process_validator(store, record.storage_namespace, workers=validator_workers, strict=False)
        started = time.monotonic()
        local_results = validate(dict.fromkeys(range_ids, ()))
        in_process_s = time.monotonic() - started
        checked = sum(r.objects for r in local_results)
        if not all(r.ok for r in local_results) or checked != objects:
            raise RuntimeError(f"in-process validation: {checked} objects, ok={[r.ok for r in local_results]}")
        print(f"[validate] in-process: {in_process_s:.1f}s ({machine_load()})", flush=True)
        settings = store_spec(service.config, service.config.store_by_id(record.storage_id))
        with tempfile.TemporaryDirectory(prefix="bench-spark-") as warehouse:
            started = time.monotonic()
            spark = local_spark(Path(warehouse))
            startup_s = time.monotonic() - started
            try:
                spark_times = []
                for _ in range(2):
                    validator = SparkRangeValidator(
                        lambda: spark,
                        settings,
                        record.storage_namespace,
                        strict_full_addresses=False,
                        num_partitions=spark_partitions,
                    )
                    started = time.monotonic()
                    spark_results = validator(dict.fromkeys(range_ids, ()))
                    spark_times.append(time.monotonic() - started)
                    print(f"[validate] Spark: {spark_times[-1]:.1f}s ({machine_load()})", flush=True)
                    if [(r.range_id, r.ok, r.objects) for r in spark_results] != [
                        (r.range_id, r.ok, r.objects) for r in local_results
                    ]:
                        raise RuntimeError("Spark and in-process validation disagree")
            finally:
                spark.stop()
    finally:
        service.close()
    return MirrorValidation(len(range_ids), objects, in_process_s, startup_s, (spark_times[0], spark_times[1]))
