"""transfer.max_bytes_in_flight: one byte budget bounds what concurrent streamed copies buffer, whatever the sizes."""

from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig
from lakefs_mirror_devenv.servers import path_style_s3_client

from lakefs_mirror_dagster.storage import (
    Blockstore,
    ByteBudget,
    CopyTask,
    LocalBlockstore,
    ObjectStat,
    TransferPool,
)
from lakefs_mirror_dagster.storage.base import ReadableStream

from .conftest import MiB, S3ServerLike, s3_store_for
from .test_transfer import Wrapped, make_objects, tasks_for

PART = 1000


class Buffering(Wrapped):
    """Buffers each write in parts of ``PART`` bytes, holding each a moment, and records the most bytes that
    all its writes held at once (what a real store's part buffers cost in memory)."""

    def __init__(self, inner: Blockstore) -> None:
        super().__init__(inner)
        self.lock = threading.Lock()
        self.held = self.max_held = self.active = self.max_active = 0

    def write_buffer_size(self, size: int) -> int:
        return min(size, PART)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        parts = []
        try:
            while part := stream.read(PART):
                with self.lock:
                    self.held += len(part)
                    self.max_held = max(self.max_held, self.held)
                time.sleep(0.01)
                parts.append(part)
                with self.lock:
                    self.held -= len(part)
            return self.inner.write_bytes(uri, b"".join(parts))
        finally:
            with self.lock:
                self.active -= 1


def test_budget_bounds_the_bytes_concurrent_copies_buffer(tmp_path: Path) -> None:
    src = LocalBlockstore(root=tmp_path / "a")
    objects = {f"local://src/o{i}": os.urandom(3 * PART + i) for i in range(8)}
    for uri, data in objects.items():
        src.write_bytes(uri, data)
    dst = Buffering(LocalBlockstore(root=tmp_path / "b"))
    pool = TransferPool(concurrency=8, max_bytes_in_flight=2 * PART + 500)
    summary = pool.run(tasks_for(src, dst, objects, lambda u: u.replace("src", "dst")))
    assert (summary.copied, summary.failed) == (8, [])
    assert dst.max_active == 2  # eight threads, but the budget lets two parts be buffered at once
    assert 2 * PART <= dst.max_held <= pool.budget.capacity
    for uri, data in objects.items():
        assert dst.read_bytes(uri.replace("src", "dst")) == data


def test_objects_larger_than_the_budget_still_copy_one_at_a_time(tmp_path: Path) -> None:
    src = LocalBlockstore(root=tmp_path / "a")
    objects = make_objects(src, 6)
    dst = Buffering(LocalBlockstore(root=tmp_path / "b"))
    pool = TransferPool(concurrency=4, max_bytes_in_flight=50)
    summary = pool.run(tasks_for(src, dst, objects, lambda u: u.replace("src", "dst")))
    assert (summary.copied, summary.failed) == (6, [])
    assert dst.max_active == 1 and pool.budget.peak == 50
    assert all(dst.read_bytes(u.replace("src", "dst")) == d for u, d in objects.items())


def test_a_large_request_is_not_starved_by_small_ones() -> None:
    budget = ByteBudget(100)
    budget.acquire(60)
    got: list[int] = []
    big = threading.Thread(target=lambda: got.append(budget.acquire(100)))
    big.start()
    time.sleep(0.05)
    small = threading.Thread(target=lambda: got.append(budget.acquire(10)))  # would fit, but comes after
    small.start()
    time.sleep(0.05)
    assert got == []
    budget.release(60)
    big.join(timeout=5)
    assert got == [100]
    budget.release(100)
    small.join(timeout=5)
    assert got == [100, 10] and budget.in_use == 10 and budget.peak == 100


def test_bad_budgets_are_refused() -> None:
    with pytest.raises(ValueError, match="positive capacity"):
        TransferPool(max_bytes_in_flight=0)
    with pytest.raises(ValueError, match="more bytes than were acquired"):
        ByteBudget(10).release(1)


def test_objects_larger_than_a_tiny_budget_copy_between_minio_buckets_and_verify(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str]
) -> None:
    """Objects written by boto3 (one PUT, and multipart in 5 MiB parts) copied S3 -> S3 streamed, with a budget
    smaller than one object: each copy waits for the budget, every copy is checked against the writer's ETag."""
    src_bucket, dst_bucket = make_bucket("budget-src"), make_bucket("budget-dst")
    writer = path_style_s3_client(s3_server.endpoint, s3_server.access_key, s3_server.secret_key)
    objects = {f"ns/o{i}": os.urandom(12 * MiB + i) for i in range(4)}
    etags = {}
    for i, (key, data) in enumerate(objects.items()):
        if i % 2:
            writer.upload_fileobj(
                io.BytesIO(data),
                src_bucket,
                key,
                Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB),
            )
        else:
            writer.put_object(Bucket=src_bucket, Key=key, Body=data)
        etags[key] = writer.head_object(Bucket=src_bucket, Key=key)["ETag"].strip('"')
    src = s3_store_for(s3_server)
    dst = s3_store_for(s3_server, multipart_threshold=5 * MiB, multipart_chunk_size=5 * MiB)
    pool = TransferPool(concurrency=4, max_bytes_in_flight=8 * MiB, allow_server_side=False)
    summary = pool.run(
        CopyTask(src, f"s3://{src_bucket}/{k}", dst, f"s3://{dst_bucket}/{k}", size=len(d), etag=etags[k])
        for k, d in objects.items()
    )
    assert (summary.copied, summary.server_side, summary.failed) == (4, 0, [])
    assert summary.checks == {"md5": 2, "multipart_md5": 2}
    assert pool.budget.peak <= 8 * MiB and pool.budget.in_use == 0
    for key, data in objects.items():
        stored = writer.get_object(Bucket=dst_bucket, Key=key)["Body"].read()
        assert hashlib.md5(stored).digest() == hashlib.md5(data).digest()
