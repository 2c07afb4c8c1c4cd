"""A Spark driver process for the cluster tests: one sync of one mirror, transfer and validation on Spark.

``python -m tests.spark.cluster_driver CONFIG MIRROR OUT`` loads the replication config (whose ``spark.master``
names the cluster), builds each engine with ``SparkPlugs`` exactly as a Dagster run's
``SparkValidatorResource`` does (transfer above ``spark.transfer_threshold_objects`` objects, validation from
``spark.validation_threshold_ranges`` ranges), syncs the mirror once and writes OUT as JSON: the results,
which paths ran, and what the driver's UI showed while the application was still running (its environment
page, its executors and stages). It is a process of its own because a JVM holds one SparkContext, and the
test process already has the local-mode one.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakefs_mirror_dagster.config import ReplicationConfig, load_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.spark.session import LazySparkSession, spark_session_config
from lakefs_mirror_dagster.spark.wiring import SparkPlugs, ValidationOnSpark

__all__ = ["main"]


def spark_everywhere(config: ReplicationConfig, session: Callable[[], Any]) -> SparkPlugs:
    """Engines that transfer and validate on Spark (each above its threshold), as a Dagster run's do."""
    validation = ValidationOnSpark(num_partitions=2, min_ranges=config.spark.validation_threshold_ranges)
    return SparkPlugs(config, session, transfer=True, validation=validation)


def _ui(session: Any, page: str) -> Any:
    sc = session.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{page}"
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.load(resp)


def main(config_path: str, mirror: str, out: str) -> int:
    config = load_config(Path(config_path))
    session = LazySparkSession(spark_session_config(config.spark, app_name="lakefs-mirror-cluster-test"))
    plugs = spark_everywhere(config, session)
    service = ReplicationService(config, plugs=plugs)
    report: dict[str, Any] = {}
    try:
        results = service.sync(name=mirror)
        use = plugs.uses.get(mirror)
        report["results"] = [r.to_json() for r in results]
        report["transfer_choices"] = dict(use.transferer.choices) if use and use.transferer else {}
        report["validation_paths"] = sorted(use.validator.paths) if use and use.validator else []
        if session.started:
            spark = session()
            report["app_id"] = spark.sparkContext.applicationId
            report["environment"] = _ui(spark, "environment")
            report["executors"] = _ui(spark, "allexecutors")
            report["stages"] = _ui(spark, "stages")
    finally:
        service.close()
        session.stop()
        Path(out).write_text(json.dumps(report))
    return 0 if report["results"] and all(r["ok"] for r in report["results"]) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
