"""Copies of large objects stream: memory stays bounded by the chunk size, not the object size."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from lakefs_mirror_dagster.storage import LocalBlockstore, copy_object

from .conftest import MiB, S3ServerLike, s3_store_for

OBJECT_SIZE = 50 * 1000 * 1000  # 50 MB

CHILD = textwrap.dedent(
    """
    import hashlib, json, os, re, sys
    from lakefs_mirror_dagster.storage import LocalBlockstore, S3Blockstore, copy_object

    MiB = 1024 * 1024
    root, bucket, size = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def status_mib(field):
        with open("/proc/self/status") as f:
            return int(re.search(field + r":\\s+(\\d+) kB", f.read()).group(1)) / 1024

    def rss_growth(operation):
        # peak RSS during the operation minus RSS before it (Linux: "5" > clear_refs resets the peak)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = status_mib("VmRSS")
        result = operation()
        return result, status_mib("VmHWM") - before

    def make_file(path, n):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            while n > 0:
                f.write(os.urandom(min(MiB, n)))
                n -= min(MiB, n)

    def sha(path):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(MiB):
                h.update(chunk)
        return h.hexdigest()

    local = LocalBlockstore(root=root)
    s3 = S3Blockstore(
        endpoint=os.environ["T_ENDPOINT"], region="us-east-1",
        access_key_id=os.environ["T_ACCESS"], secret_access_key=os.environ["T_SECRET"],
        multipart_threshold=5 * MiB, multipart_chunk_size=5 * MiB,
    )
    # warm up every code path on a 12 MiB object so imports and pools are in the baseline
    make_file(os.path.join(root, "warm/o"), 12 * MiB)
    copy_object(local, "local://warm/o", s3, f"s3://{bucket}/warm")
    copy_object(s3, f"s3://{bucket}/warm", local, "local://warm/back")
    make_file(os.path.join(root, "src/big"), size)
    up, up_growth = rss_growth(lambda: copy_object(local, "local://src/big", s3, f"s3://{bucket}/big"))
    down, down_growth = rss_growth(lambda: copy_object(s3, f"s3://{bucket}/big", local, "local://dst/big"))
    # control: loading the object whole, which the measurement must be able to see
    whole, load_growth = rss_growth(lambda: s3.read_bytes(f"s3://{bucket}/big"))
    print(json.dumps({
        "up_growth": up_growth, "down_growth": down_growth, "load_growth": load_growth,
        "reserved": s3.write_buffer_size(size) / MiB,
        "up": [up.method, up.size], "down": [down.method, down.size], "loaded": len(whole),
        "same": sha(os.path.join(root, "src/big")) == sha(os.path.join(root, "dst/big")),
    }))
    """
)


def test_peak_rss_growth_of_50mb_copies_is_bounded(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], tmp_path: Path
) -> None:
    bucket = make_bucket("mem")
    env = {**os.environ, "T_ENDPOINT": s3_server.endpoint, "T_ACCESS": s3_server.access_key}
    env["T_SECRET"] = s3_server.secret_key
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), bucket, str(OBJECT_SIZE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    m = json.loads(out.stdout.strip().splitlines()[-1])
    print("peak RSS growth MiB:", m)
    assert m["up"] == ["stream", OBJECT_SIZE] and m["down"] == ["stream", OBJECT_SIZE] and m["same"]
    # each 50 MB copy raises peak RSS by well under the object size: an upload by about the parts the byte budget
    # reserves for it (5 MiB parts, some sent while the next is filled), a download by its read buffers ...
    assert m["reserved"] < 20
    assert m["up_growth"] < m["reserved"] + 8 and m["down_growth"] < 20
    # ... while the same measurement does see a whole-object load (so it could catch one)
    assert m["loaded"] == OBJECT_SIZE and m["load_growth"] > 40


def test_traced_python_allocations_stay_bounded(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], tmp_path: Path
) -> None:
    bucket = make_bucket("mem")
    local = LocalBlockstore(root=tmp_path)
    s3 = s3_store_for(s3_server)
    src = tmp_path / "src" / "big"
    src.parent.mkdir()
    digest = hashlib.sha256()
    with open(src, "wb") as f:
        for _ in range(OBJECT_SIZE // MiB):
            block = os.urandom(MiB)
            digest.update(block)
            f.write(block)
        tail = os.urandom(OBJECT_SIZE % MiB)
        digest.update(tail)
        f.write(tail)
    tracemalloc.start()
    try:
        copy_object(local, "local://src/big", s3, f"s3://{bucket}/big")
        _, peak_up = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        copy_object(s3, f"s3://{bucket}/big", local, "local://dst/big")
        _, peak_down = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"tracemalloc peak: upload {peak_up / MiB:.1f} MiB, download {peak_down / MiB:.1f} MiB")
    assert peak_up < 20 * MiB and peak_down < 20 * MiB
    copied = hashlib.sha256((tmp_path / "dst" / "big").read_bytes()).hexdigest()
    assert copied == digest.hexdigest()
