"""A mirror whose source lakeFS garbage collection has just swept, for the GC-deletions tests (CLI and Dagster).

Objects are written with boto3 through region-a's S3 gateway and committed; two of them are deleted and the
deletion committed, so they live only in the first commit; the mirror is synced. Then they are deleted from
region-a's MinIO directly under the source namespace, as GC's sweep does (the commit history stays).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.mirrors import Mirror
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.storage import parse_uri, relative_to_namespace

from .conftest import content

KEEP, GONE = ("data/keep.csv", "data/new.csv"), ("data/old-1.csv", "data/old-2.csv")


@dataclass
class GcCase:
    repo: str
    mirror: Mirror
    source: ReplicationService
    destination: ReplicationService
    #: The destination region's config (source_stores for region-a, a short grace period).
    config_path: Path
    #: Relative addresses (in both namespaces) of the objects GC deleted at the source.
    collected: set[str]

    def mirror_objects(self) -> set[str]:
        """Relative addresses of everything in the mirror's namespace, ``_lakefs/`` included."""
        ns = self.mirror.storage_namespace
        store = self.destination.destination_store(self.mirror.storage_id)
        return {a for i in store.list_prefix(ns.rstrip("/") + "/") if (a := relative_to_namespace(ns, i.uri))}


def make_gc_case(
    lakefs_env: Environment,
    config_path: Callable[[str], Path],
    tmp_path: Path,
    unique_name: Callable[[str], str],
    *,
    dst_region: str,
    grace_period: str = "2s",
) -> GcCase:
    database = {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}}
    raw = {r: yaml.safe_load(config_path(r).read_text()) for r in ("region-a", dst_region)}
    for data in raw.values():
        data["mirrors_database"] = database
    raw[dst_region]["source_stores"] = {"region-a": raw["region-a"]["blockstore"]}
    raw[dst_region]["garbage_collection"] = {"grace_period": grace_period}
    paths = {}
    for region, data in raw.items():
        paths[region] = tmp_path / f"replication-{region}.yaml"
        paths[region].write_text(yaml.safe_dump(data))
        paths[region].chmod(0o600)
    source = ReplicationService(load_config(paths["region-a"], env={}))
    destination = ReplicationService(load_config(paths[dst_region], env={}))

    region_a = lakefs_env.region("region-a")
    client = source.client("region-a")
    repo = unique_name("gc")
    namespace = region_a.namespace_for(repo)
    client.create_repository(repo, namespace)
    gateway = region_a.s3_gateway_client()
    for path in (KEEP[0], *GONE):
        gateway.put_object(Bucket=repo, Key=f"main/{path}", Body=content(path, 200))
    first = client.commit(repo, "main", "three objects").id
    for path in GONE:
        gateway.delete_object(Bucket=repo, Key=f"main/{path}")
    gateway.put_object(Bucket=repo, Key=f"main/{KEEP[1]}", Body=content(KEEP[1], 300))
    client.commit(repo, "main", "two of them deleted, one new")
    physical = [client.stat_object(repo, first, path).physical_address for path in GONE]

    mirror = source.create_mirror(
        source_repository=repo,
        name=unique_name("gcm"),
        region=dst_region,
        storage_namespace=lakefs_env.region(dst_region).namespace_for(unique_name("gcns")),
    )
    [synced] = destination.sync(name=mirror.name)
    assert synced.ok, synced.to_json()

    minio = lakefs_env.minio[str(region_a.minio)].s3_client()
    collected = set()
    for address in physical:
        uri = parse_uri(address)
        minio.delete_object(Bucket=uri.bucket, Key=uri.key)  # GC's sweep: the object goes, its commit stays
        relative = relative_to_namespace(namespace, address)
        assert relative is not None, address
        collected.add(relative)
    mirror = next(destination.my_mirrors(name=mirror.name))
    return GcCase(repo, mirror, source, destination, paths[dst_region], collected)
