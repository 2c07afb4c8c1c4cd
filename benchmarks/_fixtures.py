"""Shared pieces of the mirroring benchmarks: a throwaway environment, fast repositories, syncs in a child.

Repositories are built one of two ways (``build_repository(method=...)``, ``--build`` on the benchmarks that
build big ones). ``links``, the way a fast real writer builds them: lakeFS hands out a physical address per
object (``get_physical_address``), the bytes go straight into MinIO with boto3 from many threads, and the
object is linked into the branch (``link_physical_address``), then one commit; about 160 objects/s on a quiet
2-core machine. ``ranges`` (the default from 50,000 objects): the objects, range files and metarange are
written straight into the namespace as lakeFS's storage holds a commit, and the commit is created through
lakeFS's commit-record API (``_ranges_build.py``). Either way the objects get ordinary *relative* addresses
inside the repository's namespace, exactly like uploads through lakeFS, so the engine copies them (the import
API would give full addresses, which the engine deliberately skips).

Also runnable as the child process that syncs one mirror (so a benchmark can read its peak RSS):

    .venv/bin/python benchmarks/_fixtures.py sync --config replication-region-c.yaml --mirror NAME
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from _spark import local_spark
from lakefs_mirror_devenv import Environment, LakeFSRegion, LinkSpec, MinioInstance, RegionSpec, environment_up
from lakefs_mirror_devenv.environment import stop_environment

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import MirrorSyncResult

if TYPE_CHECKING:
    from _ranges_build import RangeSplit

__all__ = [
    "BENCH_REGIONS",
    "BUILD_METHODS",
    "LOCAL_REGIONS",
    "STAGES",
    "STORES",
    "BuiltRepository",
    "ChildRun",
    "ChildSync",
    "MirrorValidation",
    "StageClock",
    "add_build_argument",
    "add_one_object_commit",
    "add_stores_argument",
    "bench_environment",
    "build_method",
    "build_repository",
    "cpu_delta",
    "create_mirror",
    "format_rate",
    "format_stages",
    "local_spark",
    "machine_load",
    "object_path",
    "run_child",
    "run_sync",
    "server_cpu",
    "service_config",
    "split_s3_uri",
    "sync_in_child",
    "unique",
    "validate_at_mirror",
]

#: Source on one MinIO server, mirror on another (other endpoint, other credentials): copies cross servers.
BENCH_REGIONS = (RegionSpec("region-a", "s3:minio-a"), RegionSpec("region-c", "s3:minio-c"))
#: The same two regions, each on a local directory of its own: what the engine costs when no object store's
#: per-request work shares the machine (on 2 cores, MinIO's own CPU sets the pace of every MinIO figure).
LOCAL_REGIONS = (RegionSpec("region-a", "local"), RegionSpec("region-c", "local"))
#: ``--stores`` choices of the benchmarks that take one.
STORES = {"minio": BENCH_REGIONS, "local": LOCAL_REGIONS}
SOURCE, MIRROR = "region-a", "region-c"
REPO_ROOT = Path(__file__).resolve().parent.parent


def unique(prefix: str) -> str:
    """A repository-safe unique name."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def machine_load() -> str:
    """Load averages and core count, to print beside every figure (the machine is shared)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _cpu_times() -> tuple[int, int]:
    """Idle and total jiffies of all cores so far (``/proc/stat``'s first line; idle counts iowait too)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)


def wait_until_quiet(*, idle: float = 0.8, window_s: float = 1.0, max_s: float = 90.0) -> str:
    """Wait until the cores were ``idle`` (a fraction) over one ``window_s``, at most ``max_s``; what was waited.

    After a large backfill, MinIO and lakeFS go on working for a while (MinIO's scanner, lakeFS's caches); a
    pass timed then is charged for it. The load average lags by a minute, so idle time is sampled instead.
    Where ``/proc/stat`` is missing (not Linux) nothing is waited."""
    if not os.path.exists("/proc/stat"):
        return "not waited (no /proc/stat)"
    started = time.monotonic()
    seen = 0.0
    while True:
        idle0, total0 = _cpu_times()
        time.sleep(window_s)
        idle1, total1 = _cpu_times()
        seen = (idle1 - idle0) / max(1, total1 - total0)
        waited = time.monotonic() - started
        if seen >= idle or waited >= max_s:
            quiet = "quiet" if seen >= idle else f"not quiet after {max_s:.0f}s"
            return f"waited {waited:.1f}s, {seen:.0%} idle over the last {window_s:.0f}s ({quiet})"


def format_rate(nbytes: int, seconds: float) -> str:
    return f"{nbytes / 1e6 / seconds:8.1f} MB/s" if seconds > 0 else "     inf MB/s"


@contextlib.contextmanager
def bench_environment(
    regions: tuple[RegionSpec, ...] = BENCH_REGIONS, *, keep: bool = False, links: tuple[LinkSpec, ...] = ()
) -> Iterator[Environment]:
    """lakeFS regions and MinIO servers in a temp dir; stopped and removed at the end, also on failure.
    ``links``: Toxiproxy links between regions (``devenv up --link``; ``benchmarks/wan.py``)."""
    state_dir = Path(tempfile.mkdtemp(prefix="lakefs-mirror-bench-"))
    env: Environment | None = None
    try:
        started = time.monotonic()
        env = environment_up(state_dir / "env", regions, links=links)
        print(
            f"[env] {len(env.regions)} lakeFS regions, {len(env.minio)} MinIO servers up in "
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


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key)."""
    if not uri.startswith("s3://"):
        raise ValueError(f"expected an s3:// address, got {uri!r}")
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def service_config(env: Environment, region: str, *, direct_source: str | None = None) -> Path:
    """The ready replication config of ``region``; with ``direct_source``, a copy that also reads that
    region's store directly (``source_stores``) instead of through its lakeFS API."""
    path = Path(env.state_dir) / f"replication-{region}.yaml"
    if direct_source is None:
        return path
    data = yaml.safe_load(path.read_text())
    data["source_stores"] = {direct_source: env.region(direct_source).blockstore}
    out = path.with_name(f"replication-{region}-direct-{direct_source}.yaml")
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    out.chmod(0o600)
    return out


def _admin(region: LakeFSRegion) -> LakeFSClient:
    return LakeFSClient(region.endpoint, region.access_key_id, region.secret_access_key, timeout_s=900.0)


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


def add_stores_argument(parser: argparse.ArgumentParser) -> None:
    """``--stores minio|local``: where the source and mirror regions keep their objects (``STORES``)."""
    parser.add_argument(
        "--stores",
        choices=sorted(STORES),
        default="minio",
        help="the regions' storage: two MinIO servers (default) or two local directories (no object store's CPU)",
    )


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
    client = _admin(region)
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
    client = _admin(region)
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


@dataclass
class ChildRun:
    """A finished child process: exit code, output, wall time and its own resource usage (from ``wait4``)."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    #: ``ru_maxrss``: includes the parent's RSS the child had until its ``exec`` (see ``sync_in_child``).
    peak_rss_bytes: int
    cpu_seconds: float


def run_child(
    argv: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 3600.0, what: str = "child"
) -> ChildRun:
    """Run ``argv`` to completion and read exactly its rusage (peak RSS, user + system CPU) with ``wait4``;
    killed after ``timeout_s``."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT, env=env)
    output: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda k=k, s=s: output.__setitem__(k, s.read()), daemon=True)
        for k, s in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            raise TimeoutError(f"{what} did not finish within {timeout_s:.0f}s")
        time.sleep(0.05)
    seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join(timeout=10)
    return ChildRun(
        returncode=proc.returncode,
        stdout=output.get("out", b"").decode(errors="replace"),
        stderr=output.get("err", b"").decode(errors="replace"),
        seconds=seconds,
        peak_rss_bytes=usage.ru_maxrss * 1024,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
    )


@dataclass
class ChildSync:
    """What a sync in a child process did, with the child's own resource usage."""

    seconds: float
    peak_rss_bytes: int
    cpu_seconds: float
    result: dict[str, Any]


def sync_in_child(config: Path, mirror: str, *, timeout_s: float = 3600.0) -> ChildSync:
    """Run one ``ReplicationService.sync`` of ``mirror`` in a fresh Python process; report its peak RSS (the
    child's own ``VmHWM``), CPU time and wall time.

    Not ``ru_maxrss``: Linux records the RSS of the memory a child had before ``exec`` (the parent's, shared
    after ``fork``/``vfork``) in its ``ru_maxrss``, so a benchmark that built large objects in memory measured
    itself: 20 x 64 MiB "peaked" at 1.28 GB whatever the child did."""
    argv = [sys.executable, str(Path(__file__).resolve()), "sync", "--config", str(config), "--mirror", mirror]
    run = run_child(argv, timeout_s=timeout_s, what=f"sync of {mirror}")
    if run.returncode != 0:
        raise RuntimeError(f"sync child failed ({run.returncode}): {run.stderr[-3000:]}")
    result = json.loads(run.stdout)
    return ChildSync(run.seconds, result["peak_rss_bytes"], run.cpu_seconds, result)


def _proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc (0.0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu(env: Environment) -> dict[str, float]:
    """CPU seconds used so far by each server of ``env`` (``lakefs:<region>``, ``minio:<name>``, ``toxiproxy``); the
    difference of two readings says which server a step kept busy."""
    cpu = {f"lakefs:{name}": _proc_cpu_seconds(r.pid) for name, r in env.regions.items()}
    cpu.update({f"minio:{name}": _proc_cpu_seconds(m.pid) for name, m in env.minio.items()})
    if env.toxiproxy is not None:  # the link's proxy (benchmarks/wan.py): its own CPU beside the figures
        cpu["toxiproxy"] = _proc_cpu_seconds(env.toxiproxy.pid)
    return cpu


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after}


#: The stages of a sync pass ``StageClock`` tells apart, in the order they run.
STAGES = ("plan", "range reads", "transfer", "validation", "promotion")


class StageClock:
    """Where a sync pass's time went, read from the engine's progress snapshots (``ProgressReporter``: with
    ``EVERY_S`` 0, one at each event the engine reports, and a heartbeat every 0.5 s in between): ``plan``
    (ref started -> its new ranges planned: log, metarange, cached-range checks), ``range reads`` (-> the first
    object done: the first ranges read and diffed), ``transfer`` (-> validation starts; later range reads
    overlap it), ``validation`` (-> validation ends), ``promotion`` (-> ref done: commit records, ref move).
    Stages with no mark (nothing to copy) count 0. Meant for one-ref passes."""

    #: Every event: a stage that starts and ends between two snapshots (a validation shorter than the beat)
    #: would leave no mark. It costs the syncing process a snapshot per object: 4 µs, 43 ms of CPU per 10,000
    #: objects against 7 s for their backfill.
    EVERY_S = 0.0

    def __init__(self) -> None:
        self._marks: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, progress: Any) -> None:
        now = time.monotonic()
        seen = [
            ("start", bool(progress.refs_in_flight) or progress.refs_done > 0),
            ("planned", progress.ranges_planned > 0),
            ("first object", progress.objects_done > 0),
            ("validating", progress.validating > 0),
            ("validated", "validating" in self._marks and progress.validating == 0),
            ("done", progress.refs_done > 0),
        ]
        with self._lock:
            for mark, reached in seen:
                if reached:
                    self._marks.setdefault(mark, now)

    def split(self) -> dict[str, float]:
        """Seconds per stage (``STAGES``); a missing mark takes the time of the one before it."""
        order = ["start", "planned", "first object", "validating", "validated", "done"]
        with self._lock:
            marks = dict(self._marks)
        if "start" not in marks:
            return dict.fromkeys(STAGES, 0.0)
        times = []
        for mark in order:
            times.append(marks.get(mark, times[-1] if times else marks["start"]))
        return {stage: max(0.0, b - a) for stage, a, b in zip(STAGES, times[:-1], times[1:], strict=True)}


def format_stages(stages: dict[str, float]) -> str:
    return ", ".join(f"{stage} {stages.get(stage, 0.0):.1f}s" for stage in STAGES)


def run_sync(
    config: Path, mirror: str, *, stages: StageClock | None = None
) -> tuple[float, MirrorSyncResult, dict[str, int]]:
    """One sync pass of ``mirror`` in this process: seconds, result, and metadata files read from the source;
    ``stages`` hears the pass's progress (``StageClock.split`` afterwards)."""
    service = ReplicationService(load_config(config, env={}))
    if stages is not None:
        service.on_progress(stages, every_s=StageClock.EVERY_S)
    try:
        started = time.monotonic()
        [result] = service.sync(name=mirror)
        seconds = time.monotonic() - started
        reads = dict(service.client(SOURCE).metadata_reads)
    finally:
        service.close()
    if not result.ok:
        raise RuntimeError(f"sync of {mirror} failed: {json.dumps(result.to_json())[:3000]}")
    return seconds, result, reads


@dataclass
class MirrorValidation:
    """Seconds to validate every range of one commit at the mirror, in-process and on a local Spark."""

    ranges: int
    objects: int
    in_process_s: float
    spark_startup_s: float
    #: the first call also starts Spark's Python workers; the second is the steady cost
    spark_s: tuple[float, float]


def validate_at_mirror(
    config: Path, mirror: str, commit_id: str, objects: int, *, spark_partitions: int = 3, validator_workers: int = 3
) -> MirrorValidation:
    """Validate every range of ``commit_id`` at ``mirror``'s storage with ``in_process_validator``, then twice
    with ``SparkRangeValidator`` on ``local[2]``; raises unless all agree and count ``objects`` objects."""
    from lakefs_mirror_dagster.region.service import store_spec
    from lakefs_mirror_dagster.replication import in_process_validator, read_metarange
    from lakefs_mirror_dagster.spark.validation import SparkRangeValidator

    service = ReplicationService(load_config(config, env={}))
    try:
        record = next(service.my_mirrors(name=mirror))
        store = service.destination_store(record.storage_id)
        commit = service.client(MIRROR).get_commit(mirror, commit_id)
        range_ids = read_metarange(store, record.storage_namespace, commit.metarange_id)
        print(f"[validate] commit {commit_id[:12]}: {len(range_ids)} ranges", flush=True)
        validate = in_process_validator(store, record.storage_namespace, workers=validator_workers, strict=False)
        started = time.monotonic()
        local_results = validate(dict.fromkeys(range_ids, ()))
        in_process_s = time.monotonic() - started
        checked = sum(r.objects for r in local_results)
        if not all(r.ok for r in local_results) or checked != objects:
            raise RuntimeError(f"in-process validation: {checked} objects, ok={[r.ok for r in local_results]}")
        print(f"[validate] in-process: {in_process_s:.1f}s ({machine_load()})", flush=True)
        settings = store_spec(service.config, service.config.store_by_id(record.storage_id))
        with tempfile.TemporaryDirectory(prefix="bench-spark-") as warehouse:
            started = time.monotonic()
            spark = local_spark(Path(warehouse))
            startup_s = time.monotonic() - started
            try:
                spark_times = []
                for _ in range(2):
                    validator = SparkRangeValidator(
                        lambda: spark,
                        settings,
                        record.storage_namespace,
                        strict_full_addresses=False,
                        num_partitions=spark_partitions,
                    )
                    started = time.monotonic()
                    spark_results = validator(dict.fromkeys(range_ids, ()))
                    spark_times.append(time.monotonic() - started)
                    print(f"[validate] Spark: {spark_times[-1]:.1f}s ({machine_load()})", flush=True)
                    if [(r.range_id, r.ok, r.objects) for r in spark_results] != [
                        (r.range_id, r.ok, r.objects) for r in local_results
                    ]:
                        raise RuntimeError("Spark and in-process validation disagree")
            finally:
                spark.stop()
    finally:
        service.close()
    return MirrorValidation(len(range_ids), objects, in_process_s, startup_s, (spark_times[0], spark_times[1]))


def _own_peak_rss() -> int:
    """This process's peak RSS since its ``exec`` (``VmHWM``; see ``sync_in_child`` for why not ``ru_maxrss``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # not Linux: the best there is


def _child_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="_fixtures.py sync")
    parser.add_argument("command", choices=["sync"])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--mirror", required=True)
    args = parser.parse_args(argv)
    clock = StageClock()
    seconds, result, reads = run_sync(args.config, args.mirror, stages=clock)
    stats = [r.stats for r in result.refs]
    summary = {
        "seconds": seconds,
        "stages": clock.split(),
        "objects_copied": sum(s.objects_copied for s in stats),
        "bytes_copied": sum(s.bytes_copied for s in stats),
        "ranges_validated": sum(s.ranges_validated for s in stats),
        "metadata_reads": reads,
        "peak_rss_bytes": _own_peak_rss(),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    _child_main(sys.argv[1:])
