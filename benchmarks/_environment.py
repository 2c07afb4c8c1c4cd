"""A throwaway benchmark environment: the source and mirror regions (on MinIO or local directories), their
replication configs, their admin clients, and a mirror recorded from one to the other."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import _tree  # noqa: F401  (this tree's package first on sys.path, before anything imports it)
from lakefs_mirror_devenv import Environment, LakeFSRegion, LinkSpec, RegionSpec, environment_up
from lakefs_mirror_devenv.environment import stop_environment
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService

__all__ = [
    "BENCH_REGIONS",
    "LOCAL_REGIONS",
    "MIRROR",
    "SOURCE",
    "STORES",
    "add_stores_argument",
    "admin_client",
    "bench_environment",
    "create_mirror",
    "service_config",
    "split_s3_uri",
    "unique",
]


#: Source on one MinIO server, mirror on another (other endpoint, other credentials): copies cross servers.
BENCH_REGIONS = (RegionSpec("region-a", "s3:minio-a"), RegionSpec("region-c", "s3:minio-c"))
#: The same two regions, each on a local directory of its own: what the engine costs when no object store's
#: per-request work shares the machine (on 2 cores, MinIO's own CPU sets the pace of every MinIO figure).
LOCAL_REGIONS = (RegionSpec("region-a", "local"), RegionSpec("region-c", "local"))
#: ``--stores`` choices of the benchmarks that take one.
STORES = {"minio": BENCH_REGIONS, "local": LOCAL_REGIONS}
SOURCE, MIRROR = "region-a", "region-c"


def unique(prefix: str) -> str:
    """A repository-safe unique name."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def bench_environment(
    regions: tuple[RegionSpec, ...] = BENCH_REGIONS,
    *,
    keep: bool = False,
    links: tuple[LinkSpec, ...] = (),
    lakefs_on_postgres: tuple[str, ...] = (),
) -> Iterator[Environment]:
    """lakeFS regions and MinIO servers in a temp dir; stopped and removed at the end, also on failure.
    ``links``: Toxiproxy links between regions (``devenv up --link``; ``benchmarks/wan.py``).
    ``lakefs_on_postgres``: regions whose lakeFS runs on PostgreSQL, their configs with ``refstore_database``."""
    state_dir = Path(tempfile.mkdtemp(prefix="lakefs-mirror-bench-"))
    env: Environment | None = None
    try:
        started = time.monotonic()
        env = environment_up(state_dir / "env", regions, links=links, lakefs_on_postgres=lakefs_on_postgres)
        on_postgres = f", lakeFS of {', '.join(lakefs_on_postgres)} on PostgreSQL" if lakefs_on_postgres else ""
        print(
            f"[env] {len(env.regions)} lakeFS regions, {len(env.minio)} MinIO servers{on_postgres} up in "
            f"{time.monotonic() - started:.1f}s ({state_dir})",
            flush=True,
        )
        yield env
    finally:
        if env is not None:
            stop_environment(env)
        if keep:
            print(f"[env] kept {state_dir}")
        else:
            shutil.rmtree(state_dir, ignore_errors=True)


def add_stores_argument(parser: argparse.ArgumentParser) -> None:
    """``--stores minio|local``: where the source and mirror regions keep their objects (``STORES``)."""
    parser.add_argument(
        "--stores",
        choices=sorted(STORES),
        default="minio",
        help="the regions' storage: two MinIO servers (default) or two local directories (no object store's CPU)",
    )


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key)."""
    if not uri.startswith("s3://"):
        raise ValueError(f"expected an s3:// address, got {uri!r}")
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def service_config(
    env: Environment, region: str, *, direct_source: str | None = None, transfer: Mapping[str, object] | None = None
) -> Path:
    """The ready replication config of ``region``; with ``direct_source``, a copy that also reads that
    region's store directly (``source_stores``) instead of through its lakeFS API; with ``transfer``, a copy with
    those keys of its ``transfer`` section set."""
    path = Path(env.state_dir) / f"replication-{region}.yaml"
    if direct_source is None and not transfer:
        return path
    name = f"replication-{region}"
    sections: dict[str, dict[str, Any]] = {}
    if direct_source is not None:
        sections["source_stores"] = {direct_source: env.region(direct_source).blockstore}
        name += f"-direct-{direct_source}"
    if transfer:
        sections["transfer"] = dict(transfer)
        name += "-" + "-".join(f"{k}-{v}" for k, v in sorted(transfer.items()))
    return config_variant(path, path.with_name(f"{name}.yaml"), **sections)


def admin_client(region: LakeFSRegion) -> LakeFSClient:
    return LakeFSClient(region.endpoint, region.access_key_id, region.secret_access_key, timeout_s=900.0)


def create_mirror(env: Environment, source_repo: str, *, name: str | None = None) -> str:
    """Record a mirror of ``source_repo`` (region-a) into region-c, as the tests do; returns its name."""
    name = name or unique("mirror")
    service = ReplicationService(load_config(service_config(env, SOURCE), env={}))
    try:
        service.create_mirror(
            source_repository=source_repo,
            name=name,
            region=MIRROR,
            storage_namespace=env.region(MIRROR).namespace_for(name),
        )
    finally:
        service.close()
    return name
