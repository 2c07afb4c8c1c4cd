"""Fixtures for mirroring tests: services per region built from the configs ``devenv up`` writes."""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import Commit, LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import read_metarange, validate_range


@pytest.fixture(scope="session")
def config_path(lakefs_env: Environment) -> Callable[[str], Path]:
    def path(region: str) -> Path:
        return Path(lakefs_env.state_dir) / f"replication-{region}.yaml"

    return path


@pytest.fixture
def service_for(config_path: Callable[[str], Path]) -> Iterator[Callable[[str], ReplicationService]]:
    """A replication service per region, as `lakefs-mirror --config replication-<region>.yaml` builds it."""
    services: dict[str, ReplicationService] = {}

    def get(region: str) -> ReplicationService:
        if region not in services:
            services[region] = ReplicationService(load_config(config_path(region), env={}))
        return services[region]

    yield get
    for s in services.values():
        s.close()


@pytest.fixture
def isolated_regions(
    config_path: Callable[[str], Path], tmp_path: Path
) -> Iterator[tuple[Callable[[str], Path], Callable[[str], ReplicationService]]]:
    """Region configs sharing a mirrors database of their own, so code locations built from them see
    only this test's mirrors (not those other tests left active). Returns (config path, service)."""
    database = {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}}
    paths: dict[str, Path] = {}
    services: dict[str, ReplicationService] = {}

    def path(region: str) -> Path:
        if region not in paths:
            raw = yaml.safe_load(config_path(region).read_text())
            raw["mirrors_database"] = database
            paths[region] = tmp_path / f"replication-{region}.yaml"
            paths[region].write_text(yaml.safe_dump(raw))
            paths[region].chmod(0o600)
        return paths[region]

    def service(region: str) -> ReplicationService:
        if region not in services:
            services[region] = ReplicationService(load_config(path(region), env={}))
        return services[region]

    yield path, service
    for s in services.values():
        s.close()


def content(key: str, size: int = 64) -> bytes:
    """Deterministic, key-specific bytes, so every object's content can be checked after mirroring."""
    seed = hashlib.sha256(key.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def rot_at_source(
    lakefs_env: Environment, client: LakeFSClient, repo: str, ref: str, path: str, *, offset: int = 10
) -> Callable[[], None]:
    """Flip one byte of an object at rest in region-a's MinIO, the way bit rot does: same size, and lakeFS keeps
    the old checksum. Returns the function that puts the original bytes back."""
    physical = urlsplit(client.stat_object(repo, ref, path).physical_address)
    s3 = lakefs_env.minio["minio-a"].s3_client()
    key = physical.path.lstrip("/")
    original = s3.get_object(Bucket=physical.netloc, Key=key)["Body"].read()
    rotten = bytearray(original)
    rotten[offset] ^= 0xFF
    s3.put_object(Bucket=physical.netloc, Key=key, Body=bytes(rotten))
    return lambda: s3.put_object(Bucket=physical.netloc, Key=key, Body=original)


def assert_ref_complete(service: ReplicationService, mirror_name: str, commit_id: str) -> None:
    """The invariant: the commit's metarange, every range and every object are at the destination."""
    mirror = next(service.my_mirrors(name=mirror_name))
    client = service.client(mirror.destination_region)
    commit = client.get_commit(mirror.name, commit_id)
    if not commit.metarange_id:
        return
    store = service.destination_store(mirror.storage_id)
    for range_id in read_metarange(store, mirror.storage_namespace, commit.metarange_id):
        result = validate_range(store, mirror.storage_namespace, range_id)
        assert result.ok, f"mirror {mirror_name} at {commit_id}: {result}"


def assert_mirror_equals_source(src: LakeFSClient, repo: str, dst: LakeFSClient, mirror: str) -> None:
    """Every branch and tag at the same commit, and identical logs."""
    src_branches = {r.id: r.commit_id for r in src.list_branches(repo)}
    assert {r.id: r.commit_id for r in dst.list_branches(mirror)} == src_branches
    assert {r.id: r.commit_id for r in dst.list_tags(mirror)} == {r.id: r.commit_id for r in src.list_tags(repo)}
    for branch in src_branches:
        assert same_log(list(dst.log_commits(mirror, branch)), list(src.log_commits(repo, branch))), branch


def same_log(mirror_log: list[Commit], source_log: list[Commit]) -> bool:
    """Identical commits (every field), in the same order up to ties within one second.

    lakeFS stores a commit record's creation time in whole seconds, and orders a log by time, so two merge
    parents created within the same second may be listed in either order at the mirror.
    """

    def groups(log: list[Commit]) -> list[tuple[int, frozenset[Commit]]]:
        return [(t, frozenset(g)) for t, g in itertools.groupby(log, key=lambda c: c.creation_date)]

    return groups(mirror_log) == groups(source_log)


def lakefs_operation_count(endpoint: str, operation: str) -> int:
    """How many API requests of ``operation`` (an OpenAPI operation ID such as ``ListBranches``) this lakeFS
    answered since it started, whatever their status (``lakefs_operations``)."""
    return lakefs_operations(endpoint)[operation]


def lakefs_operations(endpoint: str) -> Counter[str]:
    """The API requests this lakeFS answered since it started, by operation, whatever their status: lakeFS's own
    Prometheus ``/metrics`` (the count of its ``api_request_duration_seconds`` histogram), an observer nobody
    here wrote."""
    with urllib.request.urlopen(f"{endpoint}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    counts: Counter[str] = Counter()
    pattern = r'^api_request_duration_seconds_count\{[^}]*operation="([^"]+)"[^}]*\} (\S+)$'
    for m in re.finditer(pattern, text, re.MULTILINE):
        counts[m.group(1)] += int(float(m.group(2)))
    return counts


class InFlight:
    """Counts the calls of a wrapped function running at once; each waits (bounded) until ``expected`` are running
    together, so the peak is observed whenever the code under test allows it (an event, not a timing)."""

    def __init__(self, expected: int) -> None:
        self.expected, self.now, self.peak, self.calls = expected, 0, 0, 0
        self._lock, self._reached = threading.Lock(), threading.Event()

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.now += 1
                self.calls += 1
                self.peak = max(self.peak, self.now)
                if self.now >= self.expected:
                    self._reached.set()
            try:
                self._reached.wait(timeout=10)
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.now -= 1

        return wrapped
