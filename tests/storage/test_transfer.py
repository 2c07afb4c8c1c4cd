"""copy_object and TransferPool: method choice, skip-if-present, counts, retries, bounded concurrency."""

from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from lakefs_mirror_dagster.storage import (
    Blockstore,
    ChecksumMismatchError,
    CopyTask,
    LocalBlockstore,
    ObjectInfo,
    ObjectStat,
    S3Blockstore,
    SizeMismatchError,
    StorageAccessError,
    StorageError,
    TransferPool,
    TransientStorageError,
    copy_object,
)
from lakefs_mirror_dagster.storage.base import ReadableStream
from lakefs_mirror_dagster.storage.checksums import Check, multipart_etag

from .conftest import MiB, S3ServerLike, s3_store_for


class Wrapped(Blockstore):
    """Delegates to another store; subclasses inject faults or observe calls."""

    def __init__(self, inner: Blockstore) -> None:
        self.inner = inner

    def describe(self) -> str:
        return "wrapped " + self.inner.describe()

    def stat(self, uri: str) -> ObjectStat | None:
        return self.inner.stat(uri)

    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        return self.inner.open_read(uri)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        return self.inner.write_stream(uri, stream, size)

    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        return self.inner.write_bytes(uri, data, md5=md5)

    def delete(self, uri: str) -> None:
        self.inner.delete(uri)

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        return self.inner.list_prefix(uri_prefix, start_after=start_after)


class Flaky(Wrapped):
    """The first ``failures`` reads of each object fail transiently."""

    def __init__(self, inner: Blockstore, failures: int) -> None:
        super().__init__(inner)
        self.failures = failures
        self.calls: dict[str, int] = {}

    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        self.calls[uri] = self.calls.get(uri, 0) + 1
        if self.calls[uri] <= self.failures:
            raise TransientStorageError(f"read {uri}: temporary failure (SlowDown)", uri=uri)
        return super().open_read(uri)


class Slow(Wrapped):
    """Records how many writes run at the same time."""

    def __init__(self, inner: Blockstore, delay: float) -> None:
        super().__init__(inner)
        self.delay = delay
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(self.delay)
            return super().write_stream(uri, stream, size)
        finally:
            with self.lock:
                self.active -= 1


class RefusesServerSide(LocalBlockstore):
    def server_side_copy(self, src_uri: str, dst_uri: str) -> ObjectStat:
        raise StorageAccessError(f"copy {src_uri}: access denied (AccessDenied)", uri=src_uri)


def make_objects(store: Blockstore, count: int, prefix: str = "local://src/data") -> dict[str, bytes]:
    objects = {f"{prefix}/{i:03d}": os.urandom(100 + 37 * i) for i in range(count)}
    for uri, data in objects.items():
        store.write_bytes(uri, data)
    return objects


def tasks_for(src: Blockstore, dst: Blockstore, objects: dict[str, bytes], to: Callable[[str], str]) -> list[CopyTask]:
    return [CopyTask(src, uri, dst, to(uri)) for uri in objects]


def test_copy_object_streams_between_local_roots(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), LocalBlockstore(root=tmp_path / "b")
    src.write_bytes("local://ns/o", b"data")
    result = copy_object(src, "local://ns/o", dst, "local://ns2/o")
    assert (result.method, result.size) == ("stream", 4)
    assert dst.read_bytes("local://ns2/o") == b"data"


def test_refused_server_side_copy_falls_back_to_streaming(tmp_path: Path) -> None:
    src = LocalBlockstore(root=tmp_path)
    dst = RefusesServerSide(root=tmp_path)
    assert dst.same_endpoint_as(src)
    src.write_bytes("local://ns/o", b"data")
    result = copy_object(src, "local://ns/o", dst, "local://ns2/o")
    assert result.method == "stream"
    assert dst.read_bytes("local://ns2/o") == b"data"


def test_declared_size_is_checked(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), LocalBlockstore(root=tmp_path / "b")
    src.write_bytes("local://ns/o", b"0123456789")
    with pytest.raises(SizeMismatchError):
        copy_object(src, "local://ns/o", dst, "local://ns/o", size=20)
    assert dst.stat("local://ns/o") is None
    with pytest.raises(StorageError, match="expected 20"):
        copy_object(src, "local://ns/o", src, "local://ns/copy", size=20)  # server-side path


def test_pool_copies_then_skips_what_is_present(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), LocalBlockstore(root=tmp_path / "b")
    objects = make_objects(src, 20)

    def to(uri: str) -> str:
        return uri.replace("local://src/", "local://dst/")

    pool = TransferPool(concurrency=4)
    first = pool.run(tasks_for(src, dst, objects, to))
    assert (first.copied, first.skipped, first.failed) == (20, 0, [])
    assert first.bytes_copied == sum(len(d) for d in objects.values())
    assert all(dst.read_bytes(to(u)) == d for u, d in objects.items())

    second = pool.run(tasks_for(src, dst, objects, to))
    assert (second.copied, second.skipped, second.bytes_copied) == (0, 20, 0)
    assert second.bytes_skipped == first.bytes_copied

    # a destination object of the wrong size (e.g. a truncated earlier copy) is copied again
    victim = next(iter(objects))
    dst.write_bytes(to(victim), b"truncated")
    third = pool.run(tasks_for(src, dst, objects, to))
    assert (third.copied, third.skipped) == (1, 19)
    assert dst.read_bytes(to(victim)) == objects[victim]


class Counted(Wrapped):
    """Counts HEADs (``stat``) by URI."""

    def __init__(self, inner: Blockstore) -> None:
        super().__init__(inner)
        self.stats: list[str] = []

    def stat(self, uri: str) -> ObjectStat | None:
        self.stats.append(uri)
        return super().stat(uri)


def test_objects_known_present_are_skipped_without_a_look_and_the_rest_are_copied(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), Counted(LocalBlockstore(root=tmp_path / "b"))
    objects = make_objects(src, 6)
    tasks = [CopyTask(src, uri, dst, uri.replace("/src/", "/dst/"), len(data)) for uri, data in objects.items()]
    for task in tasks[:3]:
        dst.inner.write_bytes(task.dst_uri, objects[task.src_uri])
    known: dict[str, ObjectStat | None] = {t.dst_uri: ObjectStat(size=t.size or 0) for t in tasks[:3]}
    known[tasks[3].dst_uri] = ObjectStat(size=1)  # known, but not what the task wants: copied again
    arrived: list[str] = []

    summary = TransferPool(concurrency=2).run(tasks, known, on_result=lambda r: arrived.append(r.dst_uri))

    assert (summary.copied, summary.skipped, summary.failed) == (3, 3, [])
    assert sorted(dst.stats) == [tasks[4].dst_uri, tasks[5].dst_uri], "an object known was looked at again"
    assert sorted(arrived) == sorted(t.dst_uri for t in tasks)
    assert all(dst.read_bytes(t.dst_uri) == objects[t.src_uri] for t in tasks)


def test_a_run_of_one_copy_is_made_on_the_callers_thread_failures_and_retries_alike(tmp_path: Path) -> None:
    """A history's commit adds one object: its copy starts no thread, and still retries, fails and reports
    as a copy on the pool's threads does."""
    inner = LocalBlockstore(root=tmp_path / "a")
    [(uri, data)] = make_objects(inner, 1).items()
    dst = LocalBlockstore(root=tmp_path / "b")
    pool = TransferPool(concurrency=4, max_attempts=3, backoff_initial=0.1, sleep=lambda _: None)
    threads: list[threading.Thread] = []

    summary = pool.run(
        [CopyTask(Flaky(inner, failures=2), uri, dst, uri, len(data))],
        on_result=lambda r: threads.append(threading.current_thread()),
    )
    assert (summary.copied, summary.retries, summary.failed) == (1, 2, [])
    assert threads == [threading.current_thread()]
    assert dst.read_bytes(uri) == data

    summary = pool.run([CopyTask(inner, "local://src/missing", dst, "local://x/y")])
    [failure] = summary.failed
    assert failure.error_type == "ObjectNotFound" and summary.copied == 0


def test_pool_reports_failures_with_reasons_and_copies_the_rest(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), LocalBlockstore(root=tmp_path / "b")
    objects = make_objects(src, 5)
    tasks = [
        *tasks_for(src, dst, objects, lambda u: u),
        CopyTask(src, "local://src/missing", dst, "local://x/y"),
    ]
    summary = TransferPool(concurrency=2).run(tasks)
    assert summary.copied == 5 and not summary.ok
    [failure] = summary.failed
    assert failure.src_uri == "local://src/missing"
    assert failure.error_type == "ObjectNotFound" and "no such object" in failure.reason
    assert failure.attempts == 1  # not transient: no retries
    with pytest.raises(StorageError, match="1 object copies failed: local://src/missing"):
        summary.raise_on_failure()


def test_pool_retries_transient_errors_with_bounded_backoff(tmp_path: Path) -> None:
    inner = LocalBlockstore(root=tmp_path / "a")
    objects = make_objects(inner, 3)
    dst = LocalBlockstore(root=tmp_path / "b")
    delays: list[float] = []
    pool = TransferPool(concurrency=1, max_attempts=4, backoff_initial=0.5, backoff_max=1.0, sleep=delays.append)

    summary = pool.run(tasks_for(Flaky(inner, failures=2), dst, objects, lambda u: u))
    assert (summary.copied, summary.retries, summary.failed) == (3, 6, [])
    assert len(delays) == 6 and all(0 < d <= 1.0 for d in delays)

    delays.clear()
    summary = pool.run(tasks_for(Flaky(inner, failures=10), LocalBlockstore(root=tmp_path / "c"), objects, lambda u: u))
    assert summary.copied == 0 and len(summary.failed) == 3
    assert all(f.attempts == 4 and f.error_type == "TransientStorageError" for f in summary.failed)
    assert len(delays) == 3 * 3  # attempts - 1 sleeps per object, then it gives up


def test_pool_never_exceeds_its_concurrency(tmp_path: Path) -> None:
    src = LocalBlockstore(root=tmp_path / "a")
    objects = make_objects(src, 12)
    dst = Slow(LocalBlockstore(root=tmp_path / "b"), delay=0.1)
    summary = TransferPool(concurrency=3).run(tasks_for(src, dst, objects, lambda u: u))
    assert summary.copied == 12
    assert dst.max_active == 3  # parallel, and never more than the limit


def test_concurrent_runs_share_the_pools_concurrency(tmp_path: Path) -> None:
    """Branches syncing at once each run the engine's one pool: copies stay within ``concurrency`` overall."""
    src = LocalBlockstore(root=tmp_path / "a")
    objects = make_objects(src, 12)
    dst = Slow(LocalBlockstore(root=tmp_path / "b"), delay=0.1)
    pool = TransferPool(concurrency=3)
    halves = [dict(list(objects.items())[:6]), dict(list(objects.items())[6:])]
    summaries: list[int] = []
    runs = [
        threading.Thread(target=lambda h=h: summaries.append(pool.run(tasks_for(src, dst, h, lambda u: u)).copied))
        for h in halves
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=30)
    assert sorted(summaries) == [6, 6]
    assert dst.max_active == 3  # both runs copied in parallel, and together never more than the limit


def test_concurrent_runs_copy_a_shared_object_once(tmp_path: Path) -> None:
    """Two branches syncing at once that both need one new object: one run copies it, the other finds it."""
    src = LocalBlockstore(root=tmp_path / "a")
    objects = make_objects(src, 1)
    dst = Slow(LocalBlockstore(root=tmp_path / "b"), delay=0.2)
    pool = TransferPool(concurrency=4)
    summaries: list[tuple[int, int]] = []

    def run() -> None:
        done = pool.run(tasks_for(src, dst, objects, lambda u: u))
        summaries.append((done.copied, done.skipped))

    runs = [threading.Thread(target=run) for _ in range(2)]
    for r in runs:
        r.start()
    for r in runs:
        r.join(timeout=30)
    assert sorted(summaries) == [(0, 1), (1, 0)]


def test_pool_consumes_tasks_lazily(tmp_path: Path) -> None:
    src = LocalBlockstore(root=tmp_path / "a")
    src.write_bytes("local://src/o", b"x")
    dst = Slow(LocalBlockstore(root=tmp_path / "b"), delay=0.05)
    produced = 0
    in_flight_when_produced: list[int] = []

    def tasks() -> Iterator[CopyTask]:
        nonlocal produced
        for i in range(40):
            produced += 1
            in_flight_when_produced.append(produced - summary_counter[0])
            yield CopyTask(src, "local://src/o", dst, f"local://dst/{i}")

    summary_counter = [0]
    pool = TransferPool(concurrency=2, on_result=lambda r: summary_counter.__setitem__(0, summary_counter[0] + 1))
    summary = pool.run(tasks())
    assert summary.copied == 40
    # never more than 2 * concurrency tasks were taken from the iterable ahead of completion
    assert max(in_flight_when_produced) <= 2 * 2 + 1


def test_pool_local_to_s3_and_server_side_within_s3(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], tmp_path: Path
) -> None:
    local = LocalBlockstore(root=tmp_path)
    objects = make_objects(local, 8, prefix="local://repo/data")
    objects["local://repo/data/big"] = os.urandom(6 * MiB)
    local.write_bytes("local://repo/data/big", objects["local://repo/data/big"])
    bucket_a, bucket_b = make_bucket("a"), make_bucket("b")
    s3_a: S3Blockstore = s3_store_for(s3_server)
    s3_b: S3Blockstore = s3_store_for(s3_server)

    def to_a(uri: str) -> str:
        return uri.replace("local://repo/", f"s3://{bucket_a}/ns/")

    pool = TransferPool(concurrency=4)
    up = pool.run(tasks_for(local, s3_a, objects, to_a))
    assert (up.copied, up.server_side, up.failed) == (9, 0, [])
    assert pool.run(tasks_for(local, s3_a, objects, to_a)).skipped == 9

    across = pool.run(
        CopyTask(s3_a, to_a(u), s3_b, to_a(u).replace(bucket_a, bucket_b), size=len(d)) for u, d in objects.items()
    )
    assert (across.copied, across.server_side) == (9, 9)
    for uri, data in objects.items():
        assert s3_b.read_bytes(to_a(uri).replace(bucket_a, bucket_b)) == data


def test_pool_validates_its_settings() -> None:
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        TransferPool(concurrency=0)
    with pytest.raises(ValueError, match="max_attempts"):
        TransferPool(max_attempts=0)


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


class DamagingStore(LocalBlockstore):
    """A local store that flips one byte of every streamed write on its way to disk and, like S3, reports
    the MD5 of what it stored."""

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        data = bytearray(stream.read())
        data[len(data) // 2] ^= 1
        super().write_stream(uri, io.BytesIO(bytes(data)), len(data))
        return ObjectStat(size=len(data), etag=_md5(bytes(data)))


def test_bytes_that_do_not_hash_to_the_entry_md5_are_never_stored(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), LocalBlockstore(root=tmp_path / "b")
    src.write_bytes("local://ns/o", b"the bytes lakeFS saw, rotted since")
    with pytest.raises(ChecksumMismatchError, match="nothing was stored") as caught:
        copy_object(src, "local://ns/o", dst, "local://ns/o", size=34, etag=_md5(b"the bytes lakeFS saw, as written"))
    assert caught.value.transient
    assert dst.stat("local://ns/o") is None
    assert copy_object(src, "local://ns/o", dst, "local://ns/o", etag=_md5(src.read_bytes("local://ns/o"))).size == 34
    multipart = copy_object(src, "local://ns/o", dst, "local://ns/m", etag=f"{'0' * 32}-2")
    assert (multipart.size, multipart.check) == (34, "size")  # "-2" of unknown parts: not a content MD5


def test_object_damaged_on_its_way_into_the_destination_is_deleted_and_retried(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), DamagingStore(root=tmp_path / "b")
    data = os.urandom(1000)
    src.write_bytes("local://ns/o", data)
    summary = TransferPool(concurrency=1, max_attempts=2, sleep=lambda _s: None).run(
        [CopyTask(src, "local://ns/o", dst, "local://ns/o", len(data), _md5(data))]
    )
    assert [(f.error_type, f.attempts) for f in summary.failed] == [("ChecksumMismatchError", 2)]
    assert summary.retries == 0 and dst.stat("local://ns/o") is None  # the damaged copy was deleted


def test_pool_copies_again_an_s3_object_whose_md5_differs(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], tmp_path: Path
) -> None:
    local = LocalBlockstore(root=tmp_path)
    s3 = s3_store_for(s3_server)
    bucket = make_bucket("md5")
    data = os.urandom(4096)
    local.write_bytes("local://repo/o", data)
    rotten = bytearray(data)
    rotten[7] ^= 0xFF
    s3.write_bytes(f"s3://{bucket}/o", bytes(rotten))  # same size, other bytes: a size check would skip it
    task = CopyTask(local, "local://repo/o", s3, f"s3://{bucket}/o", len(data), _md5(data))
    summary = TransferPool(concurrency=1).run([task])
    assert (summary.copied, summary.skipped, summary.failed) == (1, 0, [])
    assert s3.read_bytes(f"s3://{bucket}/o") == data
    assert TransferPool(concurrency=1).run([task]).skipped == 1


def test_an_s3_destination_checks_single_puts_by_its_own_md5(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], tmp_path: Path
) -> None:
    """Below the multipart threshold S3 answers a PUT with the MD5 of what it stored, so the copy is checked by
    it instead of being hashed here: bytes that match lakeFS's MD5 are kept (check ``md5``), others are deleted
    and read again, hashed here, and refused; an object written in parts (lakeFS recorded its multipart ETag)
    is read a second time to find its part size, and the objects after it are hashed here from the start."""
    local = LocalBlockstore(root=tmp_path)
    s3 = s3_store_for(s3_server, multipart_threshold=32 * MiB)
    bucket = make_bucket("storemd5")
    good, rotten = os.urandom(3 * MiB), bytearray(os.urandom(3 * MiB))
    local.write_bytes("local://ns/good", good)
    local.write_bytes("local://ns/rotten", bytes(rotten))
    assert s3.answers_md5(len(good)) and not s3.answers_md5(32 * MiB)
    result = copy_object(local, "local://ns/good", s3, f"s3://{bucket}/good", size=len(good), etag=_md5(good))
    assert (result.method, result.check) == ("stream", Check.MD5)
    assert s3.read_bytes(f"s3://{bucket}/good") == good

    rotten[5] ^= 1  # lakeFS saw other bytes than the source holds now
    damaged = CopyTask(local, "local://ns/rotten", s3, f"s3://{bucket}/rotten", len(rotten), _md5(bytes(rotten)))
    summary = TransferPool(concurrency=1, max_attempts=2, sleep=lambda _s: None).run([damaged])
    assert [(f.error_type, f.attempts) for f in summary.failed] == [("ChecksumMismatchError", 2)]
    assert "nothing was stored" in summary.failed[0].reason  # the second read was hashed here and refused
    assert s3.stat(f"s3://{bucket}/rotten") is None

    objects = {f"local://ns/mp{i}": os.urandom(11 * MiB + i) for i in range(3)}
    for uri, data in objects.items():
        local.write_bytes(uri, data)
    reads: list[str] = []
    original = local.open_read

    def open_read(uri: str, *, size: int | None = None) -> BinaryIO:
        reads.append(uri)
        return original(uri, size=size)

    local.open_read = open_read  # type: ignore[method-assign]
    tasks = [
        CopyTask(local, u, s3, f"s3://{bucket}/{u[-3:]}", len(d), _multipart(d, 5 * MiB)) for u, d in objects.items()
    ]
    summary = TransferPool(concurrency=1, sleep=lambda _s: pytest.fail("no back-off")).run(tasks)
    assert summary.failed == [] and summary.checks == {"multipart_md5": 3}
    assert len(reads) == 4, "only the first object should be read twice"
    assert all(s3.read_bytes(f"s3://{bucket}/{u[-3:]}") == d for u, d in objects.items())


def _multipart(data: bytes, part_size: int) -> str:
    """What lakeFS's gateway records for ``data`` uploaded in parts: the multipart ETag without its suffix."""
    return multipart_etag(hashlib.md5(data[i : i + part_size]).digest() for i in range(0, len(data), part_size))
