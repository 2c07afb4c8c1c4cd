"""Mirroring across real distance: the same run at 0, 20, 80 and 200 ms round trip, side by side (issue 34).

The source region (region-a, MinIO A) and the mirror region (region-c, MinIO B) are joined by a Toxiproxy link
(``devenv up --link region-a->region-c``): everything the mirror region's sync sends to the source (the source
lakeFS's API, and the source store through the URLs lakeFS presigns) crosses the link's proxies, whose latency
toxics are set to rtt/2 each way before each round. Per round trip it prints (``--parts``):

- ``backfill``: ``--objects`` x ``--size`` (default 10,000 x 16 KiB): our sync of a fresh mirror vs ``rclone sync``
  of the same objects from the source store *through the same proxy* into the mirror's MinIO; the ratio of
  throughputs next to the goal (>= 1.2 at 80 ms), and our copies in flight (``transfer.concurrency``, set by
  ``--concurrency``: the limit, the most at once and the round trip ``auto`` measured);
- ``large``: the same with ``--large-objects`` x ``--large-size`` (default 20 x 64 MiB; goal >= 1.0 at 80 ms);
- ``history``: a history-heavy first sync (``--commits`` on main, ``--branches`` branches and ``--tags`` tags at
  earlier commits; default 5,000 / 100 / 200): seconds, ms per commit (goals: <= 9 ms at 80 ms, <= 3 ms at 0 ms),
  and the requests the source lakeFS served per commit, by operation (from its Prometheus ``/metrics``); then a
  one-commit incremental on that repository: the requests the source lakeFS served for it (goal: <= 10 round
  trips);
- ``lag``: commit-to-mirror lag with hooks in the engine loop, as ``lag.py``'s ``engine-hooks`` mode measures it
  (``serve`` for the source region takes the source lakeFS's post-commit hook and wakes the mirror's ``sync`` loop,
  which then syncs across the link; polling every hour): ``--lag-commits`` one-object commits, p50 and p95 (goal:
  p50 <= 1.5 s at 80 ms);
- ``egress`` (at the last round trip only): a backfill of ``--egress-seconds`` worth of 1 MiB objects at
  ``transfer.max_bytes_per_second: --egress-limit``; the rate held while copying (bytes copied over the copy
  stages' seconds) next to the goal (within 10 % of the limit over 30 s);
- the CPU seconds of every server, Toxiproxy's and PostgreSQL's included.

The mirror region's lakeFS runs on PostgreSQL, as in production (``devenv up --lakefs-on-postgres region-c``).
``--commit-records`` says how its sync writes commit records: ``refstore`` (default) with ``refstore_database``
set to that lakeFS's database, 500 records a transaction; ``api`` without it, one ``CreateCommitRecord`` request a
record. Which one was used is printed beside the figures, with the ``CreateCommitRecord`` requests the mirror's
lakeFS served. ``--source-reads`` says how it reads the source: ``api`` (default) through the source lakeFS's API
(``GetMetadataObject``, ``GetObject``; the source's MinIO is then read by its lakeFS, locally), ``store`` from the
source's MinIO through the link by address (``source_stores``; its requests count in the incremental's).

    .venv/bin/python benchmarks/wan.py [--objects 10000] [--size 16KiB] [--large-objects 20] [--large-size 64MiB]
        [--commits 5000] [--branches 100] [--tags 200] [--lag-commits 20] [--rtts 0,20,80,200] [--rate 0]
        [--transfers 16] [--concurrency auto|N] [--parts backfill,large,history,lag,egress] [--egress-limit 50Mbit]
        [--egress-seconds 30] [--commit-records refstore|api] [--source-reads api|store]

Small smoke run: ``--objects 300 --large-objects 2 --large-size 8MiB --commits 30 --branches 3 --tags 3
--lag-commits 10 --rtts 0,80``. rclone comes from the Debian package (installed here when run as root).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import random
import sys
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _environment import MIRROR, SOURCE, bench_environment, create_mirror, service_config, split_s3_uri, unique
from _lag_measure import ModeResult, run_engine
from _lag_setup import HOOKS_POLLING, LagSetting, hooks_serving, prepare, write_config
from _machine import machine_load
from _repositories import BuiltRepository, add_one_object_commit, build_repository
from _sync import format_stages, sync_in_child
from _wan_report import Backfill, HistoryRound, egress_report, report
from backfill_vs_rclone import GOAL_RATIO, Figure, ensure_rclone, measured, rclone_sync
from lakefs_mirror_devenv import Environment, LinkSpec
from lakefs_mirror_devenv.replication_config import config_variant

from lakefs_mirror_dagster.config import parse_byte_rate, parse_byte_size
from lakefs_mirror_dagster.lakefs import LakeFSClient

#: Issue 34's goal for the large objects' backfill: ours/rclone at 80 ms (the small objects' is ``GOAL_RATIO``).
GOAL_LARGE_RATIO = 1.0
#: The lag part's source repository (region-a) and its mirror across the link (region-c).
LAG_SETTING = LagSetting(source_region=SOURCE, mirror_region=MIRROR, repo="wanlag", mirror="wanlag-mirror")
PARTS = ("backfill", "large", "history", "lag", "egress")
MiB = 1024 * 1024
#: ``--commit-records``: how the mirror region's sync writes commit records (its lakeFS is on PostgreSQL either way).
COMMIT_RECORDS = {
    "refstore": "refstore_database (the mirror lakeFS's PostgreSQL, 500 records a transaction)",
    "api": "lakeFS's CreateCommitRecord (one request a record; mirror lakeFS on PostgreSQL)",
}

#: ``--source-reads``: how the mirror region's sync reads the source's files, both through the link.
SOURCE_READS = {
    "api": "through the source lakeFS's API",
    "store": "from the source's store (source_stores), metadata and objects by address",
}

#: S3 operations on the source's store that are the source lakeFS's own, never the mirror's reads across the link.
SOURCE_STORE_WRITES = (
    "PutObject",
    "CopyObject",
    "DeleteObject",
    "DeleteMultipleObjects",
    "NewMultipartUpload",
    "PutObjectPart",
    "CompleteMultipartUpload",
    "AbortMultipartUpload",
)


def set_round_trip(env: Environment, rtt_ms: float, rate_bits: float) -> None:
    """Every proxy of the link to ``rtt_ms`` (rtt/2 each way) and ``rate_bits`` (0: unlimited)."""
    assert env.toxiproxy is not None
    spec = LinkSpec(SOURCE, MIRROR, rtt_ms=rtt_ms, rate_bits=rate_bits)
    for proxy in env.links[0]["proxies"].values():
        env.toxiproxy.reshape(proxy, spec)


def mirror_config(env: Environment, commit_records: str, concurrency: str) -> Path:
    """The mirror region's config for ``--commit-records``: as devenv wrote it (``refstore_database`` set), or
    without ``refstore_database`` (``api``); with ``--concurrency``, that ``transfer.concurrency``."""
    config = service_config(env, MIRROR, transfer={"concurrency": concurrency} if concurrency else None)
    if commit_records == "refstore":
        return config
    return config_variant(config, config.with_name(f"{config.stem}-api.yaml"), without=("refstore_database",))


def api_requests(env: Environment, region: str = SOURCE) -> Counter[str]:
    """Requests ``region``'s lakeFS has served so far, by API operation (its ``api_request_duration_seconds``)."""
    counts: Counter[str] = Counter()
    with urllib.request.urlopen(f"{env.region(region).endpoint}/metrics", timeout=30) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("api_request_duration_seconds_count{"):
                labels, value = line.rsplit(" ", 1)
                operation = labels.split('operation="', 1)[1].split('"', 1)[0]
                counts[operation] += int(float(value))
    return counts


#: The MinIO of each region of the link: the source's and the mirror's.
REGION_STORES = ("minio-a", "minio-c")


def store_requests(env: Environment, minio: str) -> Counter[str]:
    """Requests a devenv MinIO has served so far, by S3 operation (its public v3 metrics: not cached, unlike v2)."""
    counts: Counter[str] = Counter()
    with urllib.request.urlopen(f"{env.minio[minio].endpoint}/minio/metrics/v3/api/requests", timeout=30) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("minio_api_requests_total{") and 'type="s3"' in line:
                labels, value = line.rsplit(" ", 1)
                counts[labels.split('name="', 1)[1].split('"', 1)[0]] += int(float(value))
    return counts


def build_history(env: Environment, commits: int, branches: int, tags: int) -> tuple[str, int]:
    """A repository with ``commits`` one-object commits on main, branches and tags at earlier commits; its name
    and its number of commits."""
    region = env.region(SOURCE)
    client = LakeFSClient(region.endpoint, region.access_key_id, region.secret_access_key, timeout_s=300.0)
    name = unique("history")
    started = time.monotonic()
    try:
        client.create_repository(name, region.namespace_for(name))
        ids = []
        for i in range(commits):
            client.upload_object(name, "main", f"log/{i:06d}.txt", f"commit {i}\n".encode())
            ids.append(client.commit(name, "main", f"commit {i}").id)
        for b in range(branches):
            client.create_branch(name, f"b{b:03d}", ids[(b * len(ids)) // max(branches, 1)])
        for t in range(tags):
            client.create_tag(name, f"v{t:03d}", ids[(t * len(ids)) // max(tags, 1)])
    finally:
        client.close()
    print(
        f"[history] {commits} commits, {branches} branches, {tags} tags in {time.monotonic() - started:.1f}s",
        flush=True,
    )
    return name, commits + 1  # and lakeFS's initial commit


def ours(env: Environment, config: Path, repo: str, payload: int, expected_objects: int | None) -> Figure:
    """A fresh mirror of ``repo`` synced by the mirror region's config (which reaches the source by the link)."""
    mirror = create_mirror(env, repo)
    child = sync_in_child(config, mirror)
    copied = child.result["objects_copied"]
    if expected_objects is not None and copied != expected_objects:
        raise RuntimeError(f"mirror {mirror}: copied {copied} objects, expected {expected_objects}")
    note = f"process {child.seconds:.1f}s, {format_stages(child.result['stages'])}{in_flight(child.result)}"
    return Figure("ours", child.result["seconds"], payload, child.cpu_seconds, note=note)


def in_flight(result: dict[str, object]) -> str:
    """The pass's copies in flight as its result reports them (``transfer.concurrency``), or nothing."""
    figures = result.get("copies_in_flight")
    if not isinstance(figures, dict):
        return ""
    rtt = figures["round_trip_seconds"]
    measured = f", source round trip {rtt * 1000:.0f} ms" if isinstance(rtt, float) else ""
    how = "auto" if figures["auto"] else "fixed"
    return f"; copies in flight: limit {figures['limit']} ({how}), at most {figures['peak']} at once{measured}"


def backfill_round(
    env: Environment, config: Path, built: BuiltRepository, rclone: str | None, transfers: int
) -> list[Figure]:
    """Our sync of a fresh mirror of ``built``, and ``rclone sync`` of its objects reading through the link."""
    src_bucket, src_prefix = split_s3_uri(built.namespace)
    dst_bucket, _ = split_s3_uri(env.region(MIRROR).namespace_root + "/x")
    payload = built.objects * built.object_size
    figures = [measured(env, lambda: ours(env, config, built.name, payload, built.objects))]
    if rclone:
        assert env.toxiproxy is not None
        store_proxy = env.toxiproxy.proxies[env.links[0]["proxies"]["store"]]
        # rclone reads the source store through the link's proxy, as our sync's presigned reads do.
        src = dataclasses.replace(env.minio[REGION_STORES[0]], endpoint=f"http://{store_proxy}")
        dst = env.minio[REGION_STORES[1]]
        src_path, dst_path = f"{src_bucket}/{src_prefix}", f"{dst_bucket}/rclone-{uuid.uuid4().hex[:8]}"
        figures.append(measured(env, lambda: rclone_sync(rclone, src, dst, src_path, dst_path, transfers, payload)))
    return figures


def history_round(
    env: Environment, configs: dict[str, Path], repo: str, commits: int, *, store_reads: bool
) -> HistoryRound:
    """A first sync of ``repo`` into a fresh mirror with the first of ``configs`` (by ``--commit-records`` name),
    then a one-commit incremental with each of them. With ``store_reads`` (``--source-reads store``) the source
    store's requests cross the link too and count in the incremental's, as ``store:<operation>``."""
    config = next(iter(configs.values()))
    before, mirror_before = api_requests(env), api_requests(env, MIRROR)
    stores_before = {m: store_requests(env, m) for m in REGION_STORES}
    mirror: list[str] = []

    def first_sync() -> Figure:
        mirror.append(create_mirror(env, repo))
        child = sync_in_child(config, mirror[0])
        note = f"process {child.seconds:.1f}s, {format_stages(child.result['stages'])}"
        return Figure("ours", child.result["seconds"], 0, child.cpu_seconds, note=note)

    figure = measured(env, first_sync)
    requests = api_requests(env) - before
    records = (api_requests(env, MIRROR) - mirror_before)["CreateCommitRecord"]
    stores = {m: store_requests(env, m) - stores_before[m] for m in REGION_STORES}
    incremental: dict[str, tuple[float, Counter[str]]] = {}
    for name, each in configs.items():
        add_one_object_commit(env, SOURCE, repo, f"incremental/{uuid.uuid4().hex[:8]}.bin")
        before = api_requests(env)
        store_before = store_requests(env, REGION_STORES[0])
        child = sync_in_child(each, mirror[0])
        served = api_requests(env) - before
        if store_reads:
            across = store_requests(env, REGION_STORES[0]) - store_before
            # the sync never writes the source's store: its writes are the source lakeFS's own (the refs dump)
            served.update({f"store:{op}": n for op, n in across.items() if not op.startswith(SOURCE_STORE_WRITES)})
        incremental[name] = (child.result["seconds"], served)
    return HistoryRound(figure, requests, records, incremental, stores)


@contextlib.contextmanager
def lag_hooks(env: Environment, work: Path) -> Iterator[Path]:
    """The lag part's source repository and its mirror, converged, and ``serve`` taking the source lakeFS's hooks
    (``lag.py``'s set-up); yields the mirror region's config with hooks on, polling every ``HOOKS_POLLING``."""
    work.mkdir(parents=True, exist_ok=True)
    prepare(env, write_config(env, HOOKS_POLLING, region=MIRROR), LAG_SETTING)
    with hooks_serving(env, work, "0s", 1, LAG_SETTING) as config:
        yield config


def lag_round(env: Environment, config: Path, work: Path, rtt: float, commits: int, rng: random.Random) -> ModeResult:
    """``lag.py``'s ``engine-hooks`` mode at this round trip: a ``sync`` loop of its own, one warm-up commit, then
    ``commits`` commits 0 to 1 s apart, each timed until the mirror's head is it."""
    mode = f"hooks-{rtt:g}ms"  # names the round's objects: each round's commits change something
    (work / mode).mkdir(parents=True, exist_ok=True)
    return run_engine(
        env,
        config,
        work / mode,
        mode=mode,
        setting=LAG_SETTING,
        commits=commits,
        warmup=1,
        interval_s=1.0,
        timeout_s=120.0,
        rng=rng,
    )


def egress_round(env: Environment, config: Path, limit: int, seconds: float) -> tuple[float, float, Figure]:
    """A backfill of ``seconds`` worth of 1 MiB objects at ``limit`` bytes/s: (bytes/s while copying, copy
    seconds, the figure). The rate is the child's bytes copied over its copy stages (range reads + transfer)."""
    objects = max(4, math.ceil(limit * seconds / MiB))
    built = build_repository(env, SOURCE, objects=objects, object_size=MiB)
    limited = config_variant(
        config, config.with_name("replication-egress.yaml"), transfer={"max_bytes_per_second": limit}
    )
    result: dict[str, object] = {}

    def run() -> Figure:
        mirror = create_mirror(env, built.name)
        child = sync_in_child(limited, mirror)
        result.update(child.result)
        note = f"process {child.seconds:.1f}s, {format_stages(child.result['stages'])}"
        return Figure("ours", child.result["seconds"], built.objects * MiB, child.cpu_seconds, note=note)

    figure = measured(env, run)
    stages = result["stages"]
    assert isinstance(stages, dict)
    copy_s = stages.get("range reads", 0.0) + stages.get("transfer", 0.0)
    copied = result["bytes_copied"]
    assert isinstance(copied, int)
    return (copied / copy_s if copy_s > 0 else float("nan")), copy_s, figure


def _byte_size(text: str) -> int:
    """An argparse type: ``16384``, ``16KiB``, ``64MiB`` (``parse_byte_size``)."""
    try:
        return parse_byte_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000, help="objects of the backfill")
    parser.add_argument("--size", type=_byte_size, default=16 * 1024, help="bytes per backfill object (16KiB)")
    parser.add_argument("--large-objects", type=int, default=20, help="objects of the large backfill")
    parser.add_argument("--large-size", type=_byte_size, default=64 * MiB, help="bytes per large object (64MiB)")
    parser.add_argument("--commits", type=int, default=5000, help="commits on main of the history repository")
    parser.add_argument("--branches", type=int, default=100, help="branches of the history repository")
    parser.add_argument("--tags", type=int, default=200, help="tags of the history repository")
    parser.add_argument("--lag-commits", type=int, default=20, help="measured commits of the lag, per round trip")
    parser.add_argument("--rtts", default="0,20,80,200", help="round trips in ms, comma-separated")
    parser.add_argument("--rate", type=float, default=0.0, help="link rate in Mbit/s each way (0: unlimited)")
    parser.add_argument("--transfers", type=int, default=16, help="rclone's --transfers and --checkers")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated: {', '.join(PARTS)}")
    parser.add_argument("--egress-limit", default="50Mbit", help="transfer.max_bytes_per_second of the egress part")
    parser.add_argument(
        "--concurrency", default="", help="our transfer.concurrency (a number or auto; default: the config's default)"
    )
    parser.add_argument(
        "--commit-records",
        choices=sorted(COMMIT_RECORDS),
        default="refstore",
        help="how the mirror writes commit records: refstore_database (default) or lakeFS's API",
    )
    parser.add_argument(
        "--source-reads",
        choices=sorted(SOURCE_READS),
        default="api",
        help="how the mirror reads the source: through its lakeFS's API (default) or its store (source_stores)",
    )
    parser.add_argument("--egress-seconds", type=float, default=30.0, help="seconds of data at the egress limit")
    args = parser.parse_args()
    try:
        args.rtt_list = [float(r) for r in args.rtts.split(",") if r.strip()]
    except ValueError:
        parser.error(f"--rtts {args.rtts!r}: expected milliseconds such as 0,20,80,200")
    args.part_set = {p.strip() for p in args.parts.split(",") if p.strip()}
    if bad := args.part_set - set(PARTS):
        parser.error(f"unknown part(s): {', '.join(sorted(bad))}")
    counts = (args.objects, args.size, args.large_objects, args.large_size, args.commits, args.lag_commits)
    if not args.rtt_list or min(args.rtt_list) < 0 or min(*counts, args.transfers) < 1:
        parser.error("round trips must be >= 0 ms; counts and sizes at least 1")
    try:
        args.egress_bytes = parse_byte_rate(args.egress_limit)
    except ValueError as exc:
        parser.error(f"--egress-limit: {exc}")
    return args


def main() -> None:
    args = _args()
    rtts, parts = args.rtt_list, args.part_set
    wanted = [
        Backfill("backfill", args.objects, args.size, GOAL_RATIO),
        Backfill("large", args.large_objects, args.large_size, GOAL_LARGE_RATIO),
    ]
    backfills = [b for b in wanted if b.part in parts]
    rclone = ensure_rclone() if backfills else None
    print(f"start: {machine_load()}")
    with (
        bench_environment(
            links=(LinkSpec(SOURCE, MIRROR, source_stores=args.source_reads == "store"),),
            lakefs_on_postgres=(MIRROR,),
        ) as env,
        contextlib.ExitStack() as stack,
    ):
        config = mirror_config(env, args.commit_records, args.concurrency)
        #: The incremental is measured both ways: the refs dump for sub-second times costs the source requests.
        others = {n: mirror_config(env, n, args.concurrency) for n in COMMIT_RECORDS if n != args.commit_records}
        incremental_configs = {args.commit_records: config, **others}
        print(f"commit records: {COMMIT_RECORDS[args.commit_records]}; source reads: {SOURCE_READS[args.source_reads]}")
        built = {b: build_repository(env, SOURCE, objects=b.objects, object_size=b.size) for b in backfills}
        history = build_history(env, args.commits, args.branches, args.tags) if "history" in parts else None
        lag_work = Path(env.state_dir) / "lag"
        lag_config = stack.enter_context(lag_hooks(env, lag_work)) if "lag" in parts else None
        rng = random.Random(7)
        backfill: dict[Backfill, dict[float, list[Figure]]] = {b: {} for b in backfills}
        first_sync: dict[float, HistoryRound] = {}
        lag: dict[float, ModeResult] = {}
        egress = None
        for rtt in rtts:
            set_round_trip(env, rtt, args.rate * 1e6)
            print(f"\n=== {rtt:g} ms round trip ({machine_load()})", flush=True)
            for b, repository in built.items():
                backfill[b][rtt] = backfill_round(env, config, repository, rclone, args.transfers)
            if history is not None:
                first_sync[rtt] = history_round(
                    env, incremental_configs, *history, store_reads=args.source_reads == "store"
                )
            if lag_config is not None:
                lag[rtt] = lag_round(env, lag_config, lag_work, rtt, args.lag_commits, rng)
        if "egress" in parts and args.egress_bytes > 0:
            print(f"\n=== egress at {args.egress_limit} over {rtts[-1]:g} ms ({machine_load()})", flush=True)
            egress = (rtts[-1], args.egress_bytes, *egress_round(env, config, args.egress_bytes, args.egress_seconds))
        refs = (
            f"{args.branches} branches, {args.tags} tags; commit records: {COMMIT_RECORDS[args.commit_records]}; "
            f"source reads: {SOURCE_READS[args.source_reads]}"
        )
        rate = f"{args.rate:g} Mbit/s" if args.rate else "unlimited"
        report(rate, rtts, backfill, first_sync, (history[1] if history else 0, refs), lag, args.lag_commits)
        if egress is not None:
            egress_report(args.egress_limit, *egress)


if __name__ == "__main__":
    main()
