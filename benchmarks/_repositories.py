"""Source repositories for the benchmarks, built fast.

Repositories are built one of two ways (``build_repository(method=...)``, ``--build`` on the benchmarks that
build big ones). ``links``, the way a fast real writer builds them: lakeFS hands out a physical address per
object (``get_physical_address``), the bytes go straight into MinIO with boto3 from many threads, and the
object is linked into the branch (``link_physical_address``), then one commit; three requests per object (the
rate is in benchmarks/README.md). ``ranges`` (the default from 50,000 objects): the objects, range files and
metarange are written straight into the namespace as lakeFS's storage holds a commit, and the commit is created through
lakeFS's commit-record API (``_ranges_build.py``). Either way the objects get ordinary *relative* addresses
inside the repository's namespace, exactly like uploads through lakeFS, so the engine copies them (the import
API would give full addresses, which the engine deliberately skips)."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import _tree  # noqa: F401  (this tree's package first on sys.path, before anything imports it)
from _environment import admin_client, split_s3_uri, unique
from _machine import machine_load
from lakefs_mirror_devenv import Environment, LakeFSRegion, MinioInstance

from lakefs_mirror_dagster.lakefs import LakeFSClient

if TYPE_CHECKING:
    from _ranges_build import RangeSplit

__all__ = [
    "BUILD_METHODS",
    "BuiltRepository",
    "add_build_argument",
    "add_one_object_commit",
    "build_method",
    "build_repository",
    "object_path",
]


@dataclass
class BuiltRepository:
    """A committed source repository: where it lives and what it holds."""

    name: str
    namespace: str
    commit_id: str
    objects: int
    object_size: int
    seconds: float
    #: ``links`` or ``ranges`` (``build_repository``)
    method: str = "links"

    @property
    def total_bytes(self) -> int:
        return self.objects * self.object_size


#: Objects bigger than this are uploaded from one file on disk (same bytes for each) instead of from memory.
IN_MEMORY_MAX = 256 * 1024 * 1024


@contextlib.contextmanager
def _payload_file(size: int) -> Iterator[Path]:
    """A temp file of ``size`` bytes (a random 16 MiB block repeated), deleted afterwards."""
    block = os.urandom(min(size, 16 * 1024 * 1024))
    with tempfile.TemporaryDirectory(prefix="bench-payload-") as tmp:
        path = Path(tmp) / "payload"
        with path.open("wb") as out:
            for start in range(0, size, len(block)):
                out.write(block[: size - start])
        yield path


def _payload_factory(size: int) -> Callable[[int], bytes]:
    """Distinct bytes per object without generating ``size`` random bytes each time: a shared random block
    with the object's index stamped at the front."""
    block = os.urandom(size)

    def make(i: int) -> bytes:
        stamp = f"{i:016d}".encode()
        return stamp + block[len(stamp) :] if size >= len(stamp) else stamp[:size]

    return make


#: How ``build_repository`` writes a repository: ``links`` (lakeFS staging API per object) or ``ranges`` (objects,
#: range files and metarange written straight into the store, then one commit record; ``_ranges_build.py``).
BUILD_METHODS = ("links", "ranges")
#: From this many objects on, ``build_repository`` uses the ``ranges`` method unless told otherwise.
RANGES_FROM_OBJECTS = 50_000


def build_method(objects: int, method: str | None) -> str:
    """The method ``build_repository`` uses: ``method`` if given, else ``ranges`` for large repositories."""
    if method is None:
        return "ranges" if objects >= RANGES_FROM_OBJECTS else "links"
    if method not in BUILD_METHODS:
        raise ValueError(f"build method must be one of {BUILD_METHODS}, got {method!r}")
    return method


def add_build_argument(parser: argparse.ArgumentParser) -> None:
    """``--build links|ranges`` on a benchmark that builds big repositories."""
    parser.add_argument(
        "--build",
        choices=BUILD_METHODS,
        default=None,
        help=f"how source repositories are built (default: ranges from {RANGES_FROM_OBJECTS:,} objects, else links)",
    )


def build_repository(
    env: Environment,
    region_name: str,
    *,
    objects: int,
    object_size: int,
    name: str | None = None,
    threads: int = 16,
    prefix: str = "data",
    progress_every: int = 20_000,
    method: str | None = None,
    split: RangeSplit | None = None,
) -> BuiltRepository:
    """Create a repository in ``region_name`` with ``objects`` objects of ``object_size`` bytes in one commit on
    ``main``: via lakeFS-issued physical addresses, direct PUTs into MinIO and links (``links``, MinIO regions
    only), or by writing objects and range files straight into the region's MinIO or local directory (``ranges``,
    cut per ``split``; see ``_ranges_build.py``). ``method`` None picks by size (``build_method``), and
    ``ranges`` on local disk."""
    region = env.region(region_name)
    name = name or unique("bench")
    if method is None and region.minio is None:
        method = "ranges"  # the links builder PUTs into MinIO
    method = build_method(objects, method)
    if method == "links" and region.minio is None:
        raise ValueError(f"region {region_name} is on local disk: the links builder PUTs into MinIO, use ranges")
    if method == "ranges" and object_size > IN_MEMORY_MAX:
        raise ValueError(f"the ranges builder keeps objects in memory; objects of {object_size:,} B need links")
    if method == "links" and split is not None:
        raise ValueError("a range split applies to the ranges builder only (lakeFS cuts the links builder's)")
    started = time.monotonic()
    client = admin_client(region)
    namespace = region.namespace_for(name)
    client.create_repository(name, namespace)
    if method == "ranges":
        return _build_with_ranges(
            client, region, name, namespace, objects, object_size, prefix, split, progress_every, started
        )
    import lakefs_sdk  # here, not at the top: the sync child would pay ~1 s of CPU importing it for nothing

    conf = lakefs_sdk.Configuration(
        host=region.api_url, username=region.access_key_id, password=region.secret_access_key
    )
    conf.connection_pool_maxsize = threads * 2
    api = lakefs_sdk.ApiClient(conf)
    staging = lakefs_sdk.StagingApi(api)
    assert region.minio is not None
    s3 = _s3_client(env.minio[region.minio], threads)
    stack = contextlib.ExitStack()
    big_body = stack.enter_context(_payload_file(object_size)) if object_size > IN_MEMORY_MAX else None
    payload = _payload_factory(object_size) if big_body is None else None
    done = 0
    lock = threading.Lock()

    def put(i: int) -> None:
        nonlocal done
        path = object_path(prefix, i)
        location = staging.get_physical_address(name, "main", path)
        bucket, key = split_s3_uri(location.physical_address)
        if payload is not None:
            etag = s3.put_object(Bucket=bucket, Key=key, Body=payload(i))["ETag"].strip('"')
        else:
            assert big_body is not None
            with big_body.open("rb") as body:
                etag = s3.put_object(Bucket=bucket, Key=key, Body=body)["ETag"].strip('"')
        staging.link_physical_address(
            name,
            "main",
            path,
            lakefs_sdk.StagingMetadata(
                staging=location, checksum=etag, size_bytes=object_size, content_type="application/octet-stream"
            ),
        )
        with lock:
            done += 1
            if done % progress_every == 0:
                rate = done / (time.monotonic() - started)
                print(f"[build] {name}: {done:,}/{objects:,} objects ({rate:,.0f}/s)", flush=True)

    try:
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="build")
        try:
            for _ in pool.map(put, range(objects)):
                pass
        finally:  # on Ctrl-C or an error, drop the objects not started yet instead of finishing them all
            pool.shutdown(wait=True, cancel_futures=True)
        commit = client.commit(name, "main", f"{objects} objects of {object_size} bytes")
    finally:
        api.close()
        client.close()
        stack.close()
    built = BuiltRepository(name, namespace, commit.id, objects, object_size, time.monotonic() - started)
    print(
        f"[build] {name}: {objects:,} x {object_size:,} B committed as {commit.id[:12]} in {built.seconds:.1f}s",
        flush=True,
    )
    return built


def _build_with_ranges(
    client: LakeFSClient,
    region: LakeFSRegion,
    name: str,
    namespace: str,
    objects: int,
    object_size: int,
    prefix: str,
    split: RangeSplit | None,
    progress_every: int,
    started: float,
) -> BuiltRepository:
    """The ``ranges`` method of ``build_repository`` (objects held in memory one at a time per PUT in flight)."""
    from _ranges_build import build_with_ranges

    def progress(done: int) -> None:
        if done % progress_every == 0:
            rate = done / (time.monotonic() - started)
            print(f"[build] {name}: {done:,}/{objects:,} objects ({rate:,.0f}/s)", flush=True)

    try:
        made = build_with_ranges(
            client,
            name,
            namespace,
            blockstore=region.blockstore,
            objects=objects,
            path_of=lambda i: object_path(prefix, i),
            payload=_payload_factory(object_size),
            split=split,
            message=f"{objects} objects of {object_size} bytes",
            on_object=progress,
        )
    finally:
        client.close()
    built = BuiltRepository(
        name, namespace, made.commit_id, objects, object_size, time.monotonic() - started, method="ranges"
    )
    steps = ", ".join(f"{k} {v:.1f}s" for k, v in made.seconds.items())
    print(
        f"[build] {name}: {objects:,} x {object_size:,} B in {len(made.range_ids)} range files committed as "
        f"{made.commit_id[:12]} in {built.seconds:.1f}s ({objects / built.seconds:,.0f} objects/s; {steps}; "
        f"{machine_load()})",
        flush=True,
    )
    return built


def add_one_object_commit(env: Environment, region_name: str, repo: str, path: str, *, size: int = 1024) -> str:
    """One new object at ``path`` in one new commit on ``main`` (the incremental benchmark's change)."""
    region = env.region(region_name)
    client = admin_client(region)
    try:
        client.upload_object(repo, "main", path, os.urandom(size))
        return client.commit(repo, "main", f"add {path}").id
    finally:
        client.close()


def object_path(prefix: str, i: int) -> str:
    """The key ``build_repository`` gives object ``i``; a suffix after it sorts right behind it."""
    return f"{prefix}/part-{i:07d}.bin"


def _s3_client(minio: MinioInstance, threads: int) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=minio.endpoint,
        aws_access_key_id=minio.access_key,
        aws_secret_access_key=minio.secret_key,
        region_name="us-east-1",
        config=Config(
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "max_attempts": 5},
            max_pool_connections=threads * 2,
        ),
    )
