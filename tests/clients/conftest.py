"""Fixtures for the client suite: mirrors of data written with the clients users really use.

Data is written with boto3 through the source lakeFS's S3 gateway and history is made through the lakeFS REST
API (``lakefs_sdk``), never with the project's upload helpers. Mirrors are created with the project's service
API and converged by the ``sync`` engine or by Dagster runs; the result is checked from outside with
``outside.assert_mirror_matches``.

Fixtures (names are stable; other modules in this package, e.g. ``test_spark_s3a.py``, may use them):

``clients_for(region) -> outside.RegionClients`` (session)
    A region as users reach it: ``.rest`` (``users.LakeFSRest``, ``lakefs_sdk`` on ``/api/v1``), ``.s3`` (boto3
    on the region's S3 gateway, path-style) and ``.region`` (the devenv ``LakeFSRegion``).
``new_repo(region="region-a", prefix="src") -> str``
    A fresh repository (default branch ``main``) created through the REST API in ``region``'s storage.
``new_mirror(repo, dst_region, source_region="region-a") -> str``
    Records a mirror of ``repo`` into ``dst_region`` with ``service_for(source_region).create_mirror``; returns
    the mirror repository's name (created at the destination by the first ``converge``).
``converge(mirror, dst_region, via="sync") -> Converged``
    One convergence round: ``via="sync"`` runs ``service_for(dst_region).sync(name=mirror)``; ``via="dagster"``
    materializes every ``branch_heads`` partition (source branches and mirror branches) and then the ``tags``
    asset on a real ``dagster.instance_for_test()`` (one instance per test). Raises ``AssertionError`` naming
    every ref that failed, with the engine's own error message.
``minio_for(region) -> boto3 S3 client``
    Straight to the MinIO server behind an S3 region (``region-a``, ``region-c``), for data lakeFS imports.
``config_path``, ``service_for``
    Re-exported from ``tests/replication/conftest.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import MirrorSyncResult
from tests.replication.conftest import config_path, service_for

from .outside import RegionClients
from .users import LakeFSRest, gateway_client, minio_client

__all__ = ["EVERY_ROUTE", "Converged", "config_path", "service_for"]


#: Run a test by each way a mirror converges: the sync engine into local disk and into MinIO, and Dagster runs.
EVERY_ROUTE = pytest.mark.parametrize(
    ("via", "dst_region"),
    [("sync", "region-b"), ("sync", "region-c"), ("dagster", "region-b")],
    ids=["sync-to-local", "sync-to-minio", "dagster-to-local"],
)


@dataclasses.dataclass
class Converged:
    """What one convergence round did: the engine's results (sync) or the Dagster runs' outcomes."""

    via: str
    results: list[MirrorSyncResult] = dataclasses.field(default_factory=list)
    #: Dagster: partition key (``""`` for the tags asset) -> run id, for every run that succeeded.
    runs: dict[str, str] = dataclasses.field(default_factory=dict)

    def ref(self, kind: str, name: str) -> Any:
        """The engine's result for one ref (sync only)."""
        return next(r for res in self.results for r in res.refs if (r.kind, r.name) == (kind, name))


@pytest.fixture(scope="session")
def clients_for(lakefs_env: Environment) -> Iterator[Callable[[str], RegionClients]]:
    cache: dict[str, RegionClients] = {}

    def get(name: str) -> RegionClients:
        if name not in cache:
            region = lakefs_env.region(name)
            cache[name] = RegionClients(region, LakeFSRest(region), gateway_client(region))
        return cache[name]

    yield get
    for c in cache.values():
        c.rest.close()


@pytest.fixture(scope="session")
def minio_for(lakefs_env: Environment) -> Callable[[str], Any]:
    def get(region: str) -> Any:
        name = lakefs_env.region(region).minio
        assert name, f"{region} is not on MinIO"
        return minio_client(lakefs_env.minio[name])

    return get


@pytest.fixture
def new_repo(clients_for: Callable[[str], RegionClients], unique_name: Callable[[str], str]) -> Callable[..., str]:
    def make(region: str = "region-a", prefix: str = "src") -> str:
        return clients_for(region).rest.create_repository(unique_name(prefix))

    return make


@pytest.fixture
def new_mirror(
    lakefs_env: Environment,
    service_for: Callable[[str], ReplicationService],
    unique_name: Callable[[str], str],
) -> Callable[..., str]:
    def make(repo: str, dst_region: str, source_region: str = "region-a") -> str:
        name = unique_name("mirror")
        service_for(source_region).create_mirror(
            source_repository=repo,
            name=name,
            region=dst_region,
            storage_namespace=lakefs_env.region(dst_region).namespace_for(name),
        )
        return name

    return make


@pytest.fixture
def converge(
    service_for: Callable[[str], ReplicationService],
    config_path: Callable[[str], Path],
    clients_for: Callable[[str], RegionClients],
) -> Iterator[Callable[..., Converged]]:
    with contextlib.ExitStack() as stack:
        instances: list[Any] = []

        def dagster_instance() -> Any:
            if not instances:
                import dagster as dg

                instances.append(stack.enter_context(dg.instance_for_test()))
            return instances[0]

        def run(mirror: str, dst_region: str, via: str = "sync") -> Converged:
            service = service_for(dst_region)
            if via == "sync":
                results = service.sync(name=mirror)
                assert [r.mirror for r in results] == [mirror], f"sync did not visit mirror {mirror}: {results}"
                failed = [f"{r.kind} {r.name}: {r.error}" for res in results for r in res.refs if r.error]
                assert not failed, f"sync of {mirror} into {dst_region} failed: " + "; ".join(failed)
                return Converged(via, results=results)
            assert via == "dagster", via
            return _dagster_round(dagster_instance(), service, config_path(dst_region), clients_for, mirror)

        yield run


def _dagster_round(
    instance: Any,
    service: ReplicationService,
    path: Path,
    clients_for: Callable[[str], RegionClients],
    name: str,
) -> Converged:
    """Materialize every branch partition of the mirror, then its tags asset, as the sensors would request."""
    import dagster as dg

    from lakefs_mirror_dagster.config import load_config
    from lakefs_mirror_dagster.orchestration.definitions import build_definitions
    from lakefs_mirror_dagster.orchestration.mirroring import (
        branch_partitions_name,
        build_branch_heads_asset,
        build_tags_asset,
    )

    mirror = service.activate(next(service.my_mirrors(name=name)))
    defs = build_definitions([name], config=load_config(path, env={}), config_path=str(path), reload=None)
    resources = dict(defs.resources or {})
    source_branches = clients_for(mirror.source_region).rest.branch_heads(mirror.source_repository)
    mirror_branches = clients_for(mirror.destination_region).rest.branch_heads(name)
    partitions = sorted(set(source_branches) | set(mirror_branches))
    known = set(instance.get_dynamic_partitions(branch_partitions_name(name)))
    instance.add_dynamic_partitions(branch_partitions_name(name), [p for p in partitions if p not in known])

    outcome, failed = Converged("dagster"), []
    for partition in partitions:
        result = dg.materialize(
            [build_branch_heads_asset(name)],
            instance=instance,
            partition_key=partition,
            resources=resources,
            raise_on_error=False,
        )
        if result.success:
            outcome.runs[partition] = result.run_id
        else:
            failed.append(f"branch {partition}: {_failure(result)}")
    result = dg.materialize([build_tags_asset(name)], instance=instance, resources=resources, raise_on_error=False)
    if result.success:
        outcome.runs[""] = result.run_id
    else:
        failed.append(f"tags: {_failure(result)}")
    assert not failed, f"Dagster runs for mirror {name} failed: " + "; ".join(failed)
    return outcome


def _failure(result: Any) -> str:
    """The failure message of a failed in-process Dagster run (the engine's error, as ``dg.Failure`` says)."""
    messages = []
    for event in result.get_step_failure_events():
        data = event.step_failure_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            messages.append(data.user_failure_data.description)
        elif data.error is not None:
            messages.append(data.error.message.strip())
    return " | ".join(messages) or "run failed without a step failure"
