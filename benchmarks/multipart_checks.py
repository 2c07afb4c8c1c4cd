"""What checking multipart checksums costs a copy: objects whose lakeFS checksum is a multipart ETag without
its ``-<parts>`` suffix (S3-gateway uploads in parts) against the same objects with their content MD5.

The first multipart object is read twice (its part size is found on the second read); the pool remembers
the part size, so every later one is read once and hashed once more per part size tried. Both runs copy
between two local directories on one TransferPool, so the figure is the checking cost, not the network.

    .venv/bin/python benchmarks/multipart_checks.py [--objects 40] [--size-mib 24] [--part-mib 8]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import tempfile
import time
from pathlib import Path

from lakefs_mirror_dagster.storage import CopyTask, LocalBlockstore, TransferPool

MiB = 1024 * 1024
CONCURRENCY = 4
#: Goal: only the objects that started before a part size was found are read twice.


def _multipart_etag(data: bytes, part: int) -> str:
    digests = b"".join(hashlib.md5(data[i : i + part]).digest() for i in range(0, len(data), part))
    return hashlib.md5(digests).hexdigest()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _copy(root: Path, label: str, objects: dict[str, bytes], checksums: dict[str, str]) -> tuple[float, float, dict]:
    src, dst = LocalBlockstore(root=root / "src"), LocalBlockstore(root=root / f"dst-{label}")
    reads = 0
    original = src.open_read

    def counting_open(uri: str):  # type: ignore[no-untyped-def]
        nonlocal reads
        reads += 1
        return original(uri)

    src.open_read = counting_open  # type: ignore[method-assign]
    tasks = [CopyTask(src, uri, dst, uri, len(data), checksums[uri]) for uri, data in objects.items()]
    wall, cpu = time.perf_counter(), _cpu()
    summary = TransferPool(concurrency=CONCURRENCY).run(tasks)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    assert summary.ok, summary.failed
    return wall, cpu, {"reads": reads, **summary.checks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=40)
    parser.add_argument("--size-mib", type=int, default=24)
    parser.add_argument("--part-mib", type=int, default=8)
    args = parser.parse_args()
    size, part = args.size_mib * MiB, args.part_mib * MiB
    with tempfile.TemporaryDirectory(prefix="multipart-checks-") as tmp:
        root = Path(tmp)
        store = LocalBlockstore(root=root / "src")
        objects = {f"local://ns/data/o-{i}": os.urandom(size) for i in range(args.objects)}
        for uri, data in objects.items():
            store.write_bytes(uri, data)
        md5s = {uri: hashlib.md5(data).hexdigest() for uri, data in objects.items()}
        parts = {uri: _multipart_etag(data, part) for uri, data in objects.items()}
        base_wall, base_cpu, base = _copy(root, "md5", objects, md5s)
        wall, cpu, checked = _copy(root, "multipart", objects, parts)
    load = os.getloadavg()[0]
    total = args.objects * size / MiB
    print(f"{args.objects} objects x {args.size_mib} MiB ({total:.0f} MiB), parts of {args.part_mib} MiB")
    print(f"  load average {load:.1f}, {CONCURRENCY} copies at once")
    print(f"  content MD5 checksums:    {base_wall:6.2f} s wall, {base_cpu:6.2f} s CPU, {base}")
    print(f"  multipart ETag checksums: {wall:6.2f} s wall, {cpu:6.2f} s CPU, {checked}")
    allowed = args.objects + CONCURRENCY
    verdict = "met" if checked["reads"] <= allowed else "missed"
    print(f"  source reads {checked['reads']} (goal <= {allowed}: {verdict})")
    print(f"  CPU ratio multipart / MD5: {cpu / base_cpu:.2f} (one more MD5 pass per part size tried)")


if __name__ == "__main__":
    main()
