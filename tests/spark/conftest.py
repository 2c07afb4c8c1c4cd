"""Fixtures for the Spark tests: the replication fixtures, region configs with extra fields, and a Spark
standalone cluster (``spark_cluster``: a master and two one-core workers, for the whole session)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.spark.wiring import SparkPlugs
from tests.replication.conftest import config_path, service_for

from .cluster import StandaloneCluster, start_standalone_cluster

__all__ = ["config_path", "service_for", "spark_cluster", "spark_service"]

# Spark's Python workers must import this package: run them with the test interpreter (before Spark starts).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture
def spark_service(
    config_path: Callable[[str], Path], tmp_path: Path, spark: Any
) -> Iterator[Callable[..., ReplicationService]]:
    """``spark_service(region, source_store_of=None, **spark_fields)``: region's service transferring on Spark,
    with its config's ``spark`` section extended and, optionally, direct access to another region's store."""
    built: list[ReplicationService] = []

    def make(region: str, *, source_store_of: str | None = None, **spark_fields: Any) -> ReplicationService:
        data = yaml.safe_load(config_path(region).read_text())
        data["spark"] = {**data.get("spark", {}), **spark_fields}
        if source_store_of is not None:
            src = yaml.safe_load(config_path(source_store_of).read_text())
            data["source_stores"] = {source_store_of: src["blockstore"]}
        path = tmp_path / f"replication-{region}-{len(built)}.yaml"
        path.write_text(yaml.safe_dump(data))
        config = load_config(path, env={})
        service = ReplicationService(config, plugs=SparkPlugs(config, lambda: spark, transfer=True))
        built.append(service)
        return service

    yield make
    for service in built:
        service.close()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A Spark standalone master and two workers (1 core each) on 127.0.0.1, stopped at the end of the session."""
    cluster = start_standalone_cluster(tmp_path_factory.mktemp("spark-cluster"), workers=2)
    try:
        yield cluster
    finally:
        cluster.stop()
