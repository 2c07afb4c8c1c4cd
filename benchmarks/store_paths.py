"""Copier CPU and time of streamed copies into and out of each object store, this tree against a baseline tree.

For each store (``s3`` on MinIO, ``azure`` on Azurite, ``gs`` on fake-gcs-server) and each tree (``--baseline``,
e.g. the main worktree, and this one), a child process imports that tree's package, copies ``--small`` objects of
``--small-size`` bytes and ``--large`` objects of ``--large-mib`` MiB from a local directory into a fresh bucket
(``TransferPool``, lakeFS-style MD5 checksums, HEAD of the destination first) and back into a fresh local
directory, and reports its own CPU seconds, wall seconds and peak RSS per phase. Both trees copy the same bytes to
the same servers in the same run, one after the other, so their ratio is what counts on a shared machine.

    .venv/bin/python benchmarks/store_paths.py --baseline /work/main [--stores s3,azure,gs]
        [--small 1000] [--small-size 16384] [--large 2] [--large-mib 64]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
HERE = Path(__file__).resolve().parent.parent
CHILD_TIMEOUT_S = 1800


def _write_sources(root: Path, small: int, small_size: int, large: int, large_mib: int) -> dict[str, str]:
    """The source objects as files under ``root/src``; returns their MD5s by name (lakeFS's checksums)."""
    checksums: dict[str, str] = {}
    for i in range(small):
        data = os.urandom(small_size)
        (root / "src" / "small").mkdir(parents=True, exist_ok=True)
        (root / "src" / "small" / f"{i:06d}").write_bytes(data)
        checksums[f"small/{i:06d}"] = hashlib.md5(data).hexdigest()
    for i in range(large):
        digest = hashlib.md5()
        (root / "src" / "large").mkdir(parents=True, exist_ok=True)
        with open(root / "src" / "large" / f"{i:03d}", "wb") as f:
            for _ in range(large_mib):
                block = os.urandom(MiB)
                digest.update(block)
                f.write(block)
        checksums[f"large/{i:03d}"] = digest.hexdigest()
    return checksums


@contextmanager
def _servers(stores: list[str], base: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """Start the emulators the stores need; yields each store's lakeFS-shaped settings and its bucket URI base."""
    from lakefs_mirror_devenv.emulators import start_azurite, start_fake_gcs, stop_azurite, stop_fake_gcs
    from lakefs_mirror_devenv.processes import stop_pid
    from lakefs_mirror_devenv.servers import start_minio

    started: list[Any] = []
    try:
        out: dict[str, dict[str, Any]] = {}
        if "s3" in stores:
            minio = start_minio("bench", base / "minio")
            started.append(lambda: stop_pid(minio.pid))
            s3 = {"endpoint": minio.endpoint, "region": "us-east-1", "force_path_style": True}
            s3["credentials"] = {"access_key_id": minio.access_key, "secret_access_key": minio.secret_key}
            out["s3"] = {"store": {"type": "s3", "s3": s3}, "base": "s3://{bucket}"}
        if "azure" in stores:
            azurite = start_azurite(base / "azurite")
            started.append(lambda: stop_azurite(azurite))
            azure = {"storage_account": azurite.account, "storage_access_key": azurite.key}
            azure["test_endpoint_url"] = azurite.account_url
            base_uri = f"https://{azurite.account}.blob.core.windows.net/{{bucket}}"
            out["azure"] = {"store": {"type": "azure", "azure": azure}, "base": base_uri}
        if "gs" in stores:
            gcs = start_fake_gcs(base)
            started.append(lambda: stop_fake_gcs(gcs))
            out["gs"] = {"store": {"type": "gs", "gs": {"endpoint": gcs.endpoint}}, "base": "gs://{bucket}"}
        yield out
    finally:
        for stop in reversed(started):
            stop()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _child(spec: dict[str, Any]) -> None:
    """Runs in the tree under test: copy local -> store -> local, print the figures as one JSON line."""
    from lakefs_mirror_dagster.storage import CopyTask, LocalBlockstore, TransferPool, build_blockstore

    root = Path(spec["root"])
    store = build_blockstore(spec["store"])
    bucket = f"b{uuid.uuid4().hex[:12]}"
    if spec["kind"] == "azure":
        store.client.create_container(bucket)  # type: ignore[attr-defined]
    else:
        store.client.create_bucket(**({"Bucket": bucket} if spec["kind"] == "s3" else {"bucket_or_name": bucket}))  # type: ignore[attr-defined]
    base = spec["base"].format(bucket=bucket)
    src = LocalBlockstore(root=root / "src")
    back = LocalBlockstore(root=root / f"back-{bucket}")
    checksums: dict[str, str] = spec["checksums"]
    figures: dict[str, Any] = {}
    for group in ("small", "large"):
        names = sorted(n for n in checksums if n.startswith(group + "/"))
        if not names:
            continue
        up = [CopyTask(src, f"local://{n}", store, f"{base}/{n}", etag=checksums[n]) for n in names]
        down = [CopyTask(store, f"{base}/{n}", back, f"local://{n}", etag=checksums[n]) for n in names]
        for phase, tasks in (("put", up), ("get", down)):
            pool = TransferPool(concurrency=spec["concurrency"])
            wall, cpu = time.perf_counter(), _cpu()
            summary = pool.run(tasks)
            wall, cpu = time.perf_counter() - wall, _cpu() - cpu
            if not summary.ok:
                raise SystemExit(f"{group} {phase}: {summary.failed[:3]}")
            figures[f"{group} {phase}"] = {"wall": wall, "cpu": cpu, "objects": summary.copied}
    figures["peak_rss_mib"] = _peak_rss_mib()
    figures["package"] = str(Path(sys.modules["lakefs_mirror_dagster"].__file__ or "").parent)
    print(json.dumps(figures))


def _run_tree(tree: Path, spec: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'devenv'}"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"child for {tree} failed ({out.returncode}): {out.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(json.loads(sys.argv[2]))
        return
    # only here: _tree puts this tree first on sys.path, and a child must import the tree it measures
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _tree  # noqa: F401
    from _machine import machine_load

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the tree to compare with (its package root)")
    parser.add_argument("--stores", default="s3,azure,gs", help="comma-separated: s3, azure, gs")
    parser.add_argument("--small", type=int, default=1000, help="small objects")
    parser.add_argument("--small-size", type=int, default=16 * 1024, help="bytes per small object")
    parser.add_argument("--large", type=int, default=2, help="large objects")
    parser.add_argument("--large-mib", type=int, default=64, help="MiB per large object")
    parser.add_argument("--concurrency", type=int, default=16, help="copies at once")
    args = parser.parse_args()
    stores = [s for s in args.stores.split(",") if s]
    trees = {"baseline": args.baseline.resolve(), "this tree": HERE}
    print(f"[bench] {machine_load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="store-paths-") as tmp:
        root = Path(tmp)
        checksums = _write_sources(root, args.small, args.small_size, args.large, args.large_mib)
        with _servers(stores, root) as servers:
            for kind in stores:
                for label, tree in trees.items():
                    spec = {
                        "kind": kind,
                        "root": str(root),
                        "checksums": checksums,
                        "concurrency": args.concurrency,
                        **servers[kind],
                    }
                    figures = _run_tree(tree, spec)
                    rss, package = figures.pop("peak_rss_mib"), figures.pop("package")
                    for phase, f in figures.items():
                        per = f"{f['cpu'] / f['objects'] * 1000:7.2f} ms CPU/object" if f["objects"] else ""
                        print(
                            f"{kind:5} {label:9} {phase:9} {f['objects']:5d} objects  {f['wall']:7.2f} s wall  "
                            f"{f['cpu']:7.2f} s CPU  {per}",
                            flush=True,
                        )
                    print(f"{kind:5} {label:9} peak RSS {rss:.0f} MiB, {package}  [{machine_load()}]", flush=True)


if __name__ == "__main__":
    main()
