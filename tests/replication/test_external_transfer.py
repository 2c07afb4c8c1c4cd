"""``transfer.mode: external``: the store's own replication brings the objects, the service puts only lakeFS's range
and metarange files, and a branch advances only once validation finds every object of its commit at the mirror.

The first test plays the store's replication itself (copies objects to the same relative keys under the mirror's
namespace, on the local blockstore of region-b). The second uses real MinIO bucket replication (set up with
``mc``) from the source region's bucket to the mirror region's bucket, and prints the timeline.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.bucket_replication import MinioClient

from lakefs_mirror_dagster.region import retry
from lakefs_mirror_dagster.replication import BlockReason, MirrorSyncResult, RefAction, RefResult
from lakefs_mirror_dagster.storage import relative_to_namespace
from lakefs_mirror_dagster.storage.uri import join_namespace

from .conftest import assert_mirror_equals_source, content

pytestmark = pytest.mark.integration

#: cooldown_on_missing: never over by itself within a test, whatever the machine's load; the tests move the
#: retry schedule's clock past it (``RetryClock``) where the reference waits it out.
COOLDOWN_S = 3600.0
#: MinIO replicates a new or resynced object within a second on loopback; bounded well above that.
DELIVERY_TIMEOUT_S = 30.0


class RetryClock:
    """The retry schedule's clock (``region.retry._now``): real time plus what the test skipped."""

    def __init__(self) -> None:
        self.skipped = dt.timedelta(0)

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + self.skipped

    def skip(self, seconds: float) -> None:
        self.skipped += dt.timedelta(seconds=seconds)


@pytest.fixture
def retry_clock(monkeypatch: pytest.MonkeyPatch) -> RetryClock:
    clock = RetryClock()
    monkeypatch.setattr(retry, "_now", clock.now)
    return clock


def external_mode(path: Path) -> Path:
    """The region config at ``path`` with ``transfer.mode: external`` and a short ``cooldown_on_missing``."""
    raw = yaml.safe_load(path.read_text())
    raw["transfer"] = {**raw.get("transfer", {}), "mode": "external"}
    raw["validator"] = {**raw.get("validator", {}), "cooldown_on_missing": f"{COOLDOWN_S}s", "num_workers": 2}
    path.write_text(yaml.safe_dump(raw))
    return path


def main_of(result: MirrorSyncResult) -> RefResult:
    [main] = [r for r in result.refs if r.name == "main"]
    return main


def assert_waiting(main: RefResult, *, missing: int) -> None:
    """Blocked as ``missing`` (the cooldown of missing data), not moved, nothing copied, ``missing`` awaited."""
    assert (main.action, main.blocked_by) == (RefAction.BLOCKED, BlockReason.MISSING), main.to_json()
    assert main.mirror_commit == main.mirror_commit_before, main.to_json()
    assert "waiting for the store's replication" in (main.error or ""), main.error
    assert (main.stats.objects_copied, main.stats.objects_missing) == (0, missing), main.to_json()


def test_external_mode_copies_no_object_and_advances_once_all_arrived(
    lakefs_env: Environment, isolated_regions, unique_name, retry_clock: RetryClock
) -> None:
    config_path, service = isolated_regions
    external_mode(config_path("region-b"))
    src_svc, dst_svc = service("region-a"), service("region-b")
    src = src_svc.client("region-a")
    repo = unique_name("ext")
    src_ns = lakefs_env.region("region-a").namespace_for(repo)
    src.create_repository(repo, src_ns)
    keys = [f"data/{i}.bin" for i in range(3)]
    for key in keys:
        src.upload_object(repo, "main", key, content(f"{repo}/{key}", 300))
    head = src.commit(repo, "main", "three objects").id
    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    dst_store = dst_svc.destination_store(mirror.storage_id)
    dst = dst_svc.client("region-b")

    def replicate(some: list[str]) -> None:
        """What the store's replication does: the source's object, same relative key, mirror's namespace."""
        for key in some:
            physical = src.stat_object(repo, "main", key).physical_address
            address = relative_to_namespace(src_ns, physical)
            assert address is not None
            data = src_svc.destination_store().read_bytes(physical)
            dst_store.write_bytes(join_namespace(mirror.storage_namespace, address), data)

    [first] = dst_svc.sync(name=mirror.name)
    main = main_of(first)
    assert_waiting(main, missing=3)
    assert main.stats.objects_awaited == 3 and main.stats.transfer_path == "external"
    assert "main" not in {b.id for b in dst.list_branches(mirror.name)}
    written = [
        relative_to_namespace(mirror.storage_namespace, o.uri)
        for o in dst_store.list_prefix(mirror.storage_namespace + "/")
    ]
    assert written and all(a and a.startswith("_lakefs/") for a in written), written  # metadata only

    replicate(keys[:2])
    [held] = dst_svc.sync(name=mirror.name)
    assert main_of(held).action == RefAction.DEFERRED, main_of(held).to_json()  # cooldown_on_missing
    retry_clock.skip(COOLDOWN_S)
    [second] = dst_svc.sync(name=mirror.name)
    assert_waiting(main_of(second), missing=1)
    assert main_of(second).stats.metadata_files_present >= 1  # its range file from the first pass: not rewritten

    replicate(keys[2:])
    retry_clock.skip(COOLDOWN_S)
    [third] = dst_svc.sync(name=mirror.name, due_only=True)  # the retry pass of validator.run_interval
    main = main_of(third)
    assert (main.action, main.mirror_commit, main.error) == (RefAction.CREATED, head, None), main.to_json()
    assert (main.stats.objects_copied, main.stats.objects_missing) == (0, 0), main.to_json()
    for key in keys:
        assert dst.get_object(mirror.name, "main", key) == content(f"{repo}/{key}", 300)


def test_minio_bucket_replication_delivers_and_the_waiting_branch_advances(
    lakefs_env: Environment, isolated_regions, unique_name, tmp_path: Path, retry_clock: RetryClock
) -> None:
    """Source region-a on MinIO ``minio-a``, mirror in region-c on MinIO ``minio-c``, each repository in a fresh
    versioned bucket; a MinIO replication rule (``mc``) from the source namespace's bucket and prefix to the
    mirror's bucket under the same prefix. The objects are written and committed before the rule exists, so
    the first sync finds them late; the rule and a resync deliver them, and the next sync promotes."""
    config_path, service = isolated_regions
    external_mode(config_path("region-c"))
    src_svc, dst_svc = service("region-a"), service("region-c")
    src_minio, dst_minio = lakefs_env.minio["minio-a"], lakefs_env.minio["minio-c"]
    repo = unique_name("ext")
    src_bucket, dst_bucket = src_minio.make_bucket(unique_name("src")), dst_minio.make_bucket(unique_name("dst"))
    # The mirror's namespace is where replication puts the source's keys: same prefix, the mirror region's bucket.
    src_ns, dst_ns = f"s3://{src_bucket}/{repo}", f"s3://{dst_bucket}/{repo}"
    started = time.monotonic()
    timeline: list[str] = []

    def mark(event: str) -> None:
        timeline.append(f"t+{time.monotonic() - started:5.2f}s  {event}")
        print(timeline[-1], flush=True)

    src = src_svc.client("region-a")
    src.create_repository(repo, src_ns)
    gateway = lakefs_env.region("region-a").s3_gateway_client()
    objects = {f"data/part-{i}.bin": content(f"{repo}/{i}", 1000 + i) for i in range(4)}
    for key, body in objects.items():
        gateway.put_object(Bucket=repo, Key=f"main/{key}", Body=body)
    head = src.commit(repo, "main", "four objects through the S3 gateway").id
    committed = time.monotonic()
    mark(f"source: {len(objects)} objects written through lakeFS's S3 gateway, committed {head[:12]}")
    mirror = src_svc.create_mirror(
        source_repository=repo, name=unique_name("m"), region="region-c", storage_namespace=dst_ns
    )
    dst = dst_svc.client("region-c")
    dst_s3 = dst_minio.s3_client()
    physical = {key: src.stat_object(repo, "main", key).physical_address for key in objects}

    def delivered() -> int:
        """Objects of the commit the store's replication has put into the mirror's bucket so far."""
        listed = dst_s3.list_objects_v2(Bucket=dst_bucket, Prefix=f"{repo}/data/").get("Contents", [])
        keys = {o["Key"] for o in listed}
        return sum(urlsplit(physical[k]).path.lstrip("/") in keys for k in objects)

    [first] = dst_svc.sync(name=mirror.name)
    main = main_of(first)
    assert_waiting(main, missing=len(objects))
    assert main.stats.objects_awaited == len(objects) and delivered() == 0
    assert "main" not in {b.id for b in dst.list_branches(mirror.name)}
    mark(
        f"sync 1: main {main.action} ({main.blocked_by}), objects awaited {main.stats.objects_awaited}, "
        f"missing {main.stats.objects_missing}, copied {main.stats.objects_copied}; mirror has no main"
    )

    mc = MinioClient(tmp_path / "mc")
    arn = mc.replicate(src_minio, src_bucket, f"{repo}/", dst_minio, dst_bucket)
    mark(f"replication rule {src_minio.name}/{src_bucket}/{repo}/ -> {dst_minio.name}/{dst_bucket} added ({arn})")
    mc.resync(src_minio, src_bucket, arn)  # the objects written before the rule: replicate them now
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while (count := delivered()) < len(objects) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert count == len(objects), f"MinIO delivered {count} of {len(objects)} objects in {DELIVERY_TIMEOUT_S}s"
    mark(
        f"MinIO replication delivered {count}/{len(objects)} objects to {dst_bucket}: "
        f"{time.monotonic() - committed:.2f}s after the commit"
    )

    retry_at = next(b for b in dst_svc.mirrors.get_branches(mirror.id) if b.branch == "main").retry_after
    assert retry_at is not None
    retry_clock.skip(max(0.0, (retry_at - retry_clock.now()).total_seconds()))
    [second] = dst_svc.sync(name=mirror.name, due_only=True)  # the retry pass after cooldown_on_missing
    main = main_of(second)
    assert (main.action, main.mirror_commit, main.error) == (RefAction.CREATED, head, None), main.to_json()
    assert (main.stats.objects_copied, main.stats.objects_missing) == (0, 0), main.to_json()
    mark(
        f"sync 2 (retry pass after cooldown_on_missing): main {main.action} at {head[:12]}, objects copied 0, "
        f"missing 0, range/metarange files already at the mirror (not rewritten) {main.stats.metadata_files_present}"
    )

    mirror_gateway = lakefs_env.region("region-c").s3_gateway_client()
    for key, body in objects.items():
        assert mirror_gateway.get_object(Bucket=mirror.name, Key=f"main/{key}")["Body"].read() == body, key
    assert_mirror_equals_source(src, repo, dst, mirror.name)
    mark(f"mirror read back through region-c's lakeFS: {len(objects)} objects equal the source's")
