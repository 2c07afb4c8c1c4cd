"""Fixtures for the Dagster layer: a real Dagster instance, real lakeFS regions, Spark in local mode."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.config import ReplicationConfig, load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.mirrors import Mirror
from lakefs_mirror_dagster.orchestration.definitions import build_definitions
from lakefs_mirror_dagster.region import ReplicationService
from tests.replication.conftest import config_path, content, isolated_regions, service_for

__all__ = [
    "MirrorCase",
    "config_path",
    "daemon_mirror",
    "gateway_source",
    "isolated_case",
    "isolated_regions",
    "service_for",
]

# Spark's Python workers must import this package: run them with the test interpreter. Set before any
# SparkContext starts (the session fixture and the validator resource share one session).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@dataclass
class MirrorCase:
    """A source repository in region-a and its (pending) mirror in region-b."""

    repo: str
    mirror: Mirror
    src: LakeFSClient
    dst: LakeFSClient
    src_service: ReplicationService
    service: ReplicationService
    config: ReplicationConfig
    config_path: Path

    def definitions(self, *, config: ReplicationConfig | None = None, **kwargs: object) -> dg.Definitions:
        """This mirror's definitions, as the code location builds them (no code-location reloads), from
        ``config`` if given (the runs' resource still reads ``config_path``)."""
        return build_definitions(
            [self.mirror.name], config=config or self.config, config_path=str(self.config_path), reload=None, **kwargs
        )

    def commit(self, branch: str, files: dict[str, int], message: str) -> str:
        for key, size in files.items():
            self.src.upload_object(self.repo, branch, key, content(key, size))
        return self.src.commit(self.repo, branch, message).id


def isolated_case(
    lakefs_env: Environment,
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    unique_name: Callable[[str], str],
    prefix: str,
    path: Path,
    config: ReplicationConfig | None = None,
) -> MirrorCase:
    """A new source repository in region-a and its pending mirror in region-b, recorded in the isolated regions'
    database; ``path`` is region-b's config (``config``: that config as loaded, if changed after loading)."""
    service = isolated_regions[1]
    src_svc, dst_svc = service("region-a"), service("region-b")
    src = src_svc.client("region-a")
    repo = unique_name(prefix)
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    config = config or load_config(path, env={})
    return MirrorCase(repo, mirror, src, dst_svc.client("region-b"), src_svc, dst_svc, config, path)


def gateway_source(
    lakefs_env: Environment, service: Callable[[str], ReplicationService], repo: str
) -> tuple[LakeFSClient, Any]:
    """Create ``repo`` in region-a; return region-a's lakeFS client and a boto3 client of its S3 gateway, which the
    daemon tests write the source's objects with."""
    src = service("region-a").client("region-a")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    return src, lakefs_env.region("region-a").s3_gateway_client()


def daemon_mirror(
    lakefs_env: Environment,
    isolated_regions: tuple[Callable[[str], Path], Callable[[str], ReplicationService]],
    repo: str,
    name: str,
    out: Path,
    *,
    sensor_interval: str = "2s",
) -> Path:
    """Mirror ``repo`` (region-a) as ``name`` in region-b, active as the manager sensor's first tick leaves it,
    and return region-b's config for ``dagster-daemon`` at ``out``: the commit sensor scanning every
    ``sensor_interval``."""
    from lakefs_mirror_devenv.replication_config import config_variant

    from lakefs_mirror_dagster.orchestration.mirroring import reconcile_mirrors

    path, service = isolated_regions
    service("region-a").create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    assert reconcile_mirrors(service("region-b")).activated == [name]  # what the manager sensor does first
    return config_variant(path("region-b"), out, commit_sensor={"process_branches_duration": sensor_interval})


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def mirror_case(
    lakefs_env: Environment,
    service_for: Callable[[str], ReplicationService],
    config_path: Callable[[str], Path],
    unique_name: Callable[[str], str],
    spark: object,
) -> MirrorCase:
    """A repository with one commit on ``main``, mirrored from region-a (MinIO) to region-b (local)."""
    src_svc, dst_svc = service_for("region-a"), service_for("region-b")
    src = src_svc.client("region-a")
    repo, name = unique_name("repo"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    path = config_path("region-b")
    config = load_config(path, env={})
    # Validate every batch on Spark, however small (the default keeps batches under 16 ranges in-process).
    config = dataclasses.replace(config, spark=dataclasses.replace(config.spark, validation_threshold_ranges=0))
    case = MirrorCase(repo, mirror, src, dst_svc.client("region-b"), src_svc, dst_svc, config, path)
    case.commit("main", {f"tables/t/part-{i}.parquet": 100 + i for i in range(3)}, "first")
    return case
