"""Objects written with boto3 through the source lakeFS's S3 gateway mirror exactly: bytes, ETag, Content-Type
and user metadata read back identical through the mirror's gateway.

Single-part objects (awkward keys, an empty object, a key longer than 1,000 bytes, Content-Type and user
metadata) and multipart uploads (``upload_fileobj`` with a 5 MiB threshold and several part sizes, one of them
ending in a 1-byte part). The source is region-a (lakeFS on MinIO); mirrors go to region-b (local disk) and
region-c (another MinIO), converged by the ``sync`` engine or by Dagster runs.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import EVERY_ROUTE, Converged
from .outside import RegionClients, assert_mirror_matches
from .users import MiB, blob, multipart_upload, put

pytestmark = pytest.mark.integration

#: A key of more than 1,000 bytes (S3 allows 1,024 for the whole key, ``main/`` included).
LONG_KEY = "long/" + "/".join(["d" * 99] * 10) + "/end.bin"
assert len(LONG_KEY.encode()) > 1000 and len(f"main/{LONG_KEY}".encode()) <= 1024

#: path -> (size, Content-Type or None, user metadata)
SINGLE_PART: dict[str, tuple[int, str | None, dict[str, str]]] = {
    "plain/part-00000.csv": (3000, "text/csv", {}),
    "with spaces/a file name.csv": (120, "text/csv; charset=utf-8", {"owner": "data team"}),
    "unicode/données-naïve-日本語-🚀.txt": (77, "text/plain; charset=utf-8", {}),
    "percent/100%-done %2F not a slash %%.txt": (64, None, {"pct": "100%"}),
    "plus/a+b=c+d.txt": (65, "application/octet-stream", {"formula": "a+b=c+d"}),
    "mixed/ leading space, +plus+ & %25 and ü ": (33, None, {}),
    "empty/zero-bytes.bin": (0, "application/x-empty", {"note": "empty object"}),
    "folder/": (0, "application/x-directory", {}),  # a "directory marker", as S3 consoles and s3a write them
    "meta/with-metadata.json": (
        512,
        "application/json",
        {"pipeline": "nightly-etl", "run-id": "20240101T000000", "mixed-case-key": "Value With Spaces"},
    ),
    LONG_KEY: (256, "application/octet-stream", {"length": str(len(LONG_KEY))}),
}


def _write_single_parts(src: RegionClients, repo: str, generation: str) -> dict[str, bytes]:
    written = {}
    for path, (size, content_type, metadata) in SINGLE_PART.items():
        data = blob(f"{generation}:{path}", size)
        put(src.s3, repo, "main", path, data, content_type=content_type, metadata=metadata)
        written[path] = data
    return written


def _assert_source_holds(src: RegionClients, repo: str, ref: str, expected: dict[str, bytes]) -> None:
    """The source gateway stored exactly what boto3 sent (so a difference later is the mirror's)."""
    for path, data in expected.items():
        got = src.s3.get_object(Bucket=repo, Key=f"{ref}/{path}")["Body"].read()
        assert got == data, f"source {repo}@{ref} {path!r}: lakeFS itself did not store what boto3 sent"


@EVERY_ROUTE
def test_single_part_objects_keys_and_metadata_mirror_exactly(
    via: str,
    dst_region: str,
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    src, dst = clients_for("region-a"), clients_for(dst_region)
    repo = new_repo("region-a")
    first = _write_single_parts(src, repo, "first")
    c1 = src.rest.commit(repo, "main", "objects through the S3 gateway", {"writer": "boto3"})
    src.rest.create_tag(repo, "v1", c1)
    _assert_source_holds(src, repo, "v1", first)
    name = new_mirror(repo, dst_region)

    converge(name, dst_region, via=via)
    report = assert_mirror_matches(src, repo, dst, name)
    assert report.entries_compared == len(SINGLE_PART) and report.objects_read == len(SINGLE_PART)
    meta = dst.s3.head_object(Bucket=name, Key="main/meta/with-metadata.json")
    # (lakeFS's gateway answers metadata names in Go's canonical case, "Run-Id": on the source too.)
    assert {k.lower(): v for k, v in meta["Metadata"].items()} == SINGLE_PART["meta/with-metadata.json"][2]
    assert meta["ContentType"] == "application/json"
    assert dst.s3.get_object(Bucket=name, Key="main/empty/zero-bytes.bin")["Body"].read() == b""

    # Round 2, incremental: overwrite with new bytes and metadata, delete, add; v1 keeps the old versions.
    put(src.s3, repo, "main", "plus/a+b=c+d.txt", b"rewritten", content_type="text/plain", metadata={"v": "2"})
    src.s3.delete_object(Bucket=repo, Key="main/with spaces/a file name.csv")
    src.s3.delete_object(Bucket=repo, Key=f"main/{LONG_KEY}")
    put(src.s3, repo, "main", "new/after first sync.txt", blob("new", 999), metadata={"round": "2"})
    c2 = src.rest.commit(repo, "main", "second round", {"round": "2"})
    src.rest.create_tag(repo, "v2", c2)

    # The check is not vacuous: before the mirror converges again, it sees the difference.
    with pytest.raises(AssertionError, match="branches differ"):
        assert_mirror_matches(src, repo, dst, name)
    converge(name, dst_region, via=via)
    report = assert_mirror_matches(src, repo, dst, name)
    assert report.commits_compared == 2
    assert dst.s3.get_object(Bucket=name, Key="v1/plus/a+b=c+d.txt")["Body"].read() == first["plus/a+b=c+d.txt"]
    assert dst.s3.get_object(Bucket=name, Key="main/plus/a+b=c+d.txt")["Body"].read() == b"rewritten"


#: (object size, part size): the case users reported, an 8 MiB part size, and a last part of 1 byte.
MULTIPART_SHAPES = [(12 * MiB, 5 * MiB), (9 * MiB, 8 * MiB), (5 * MiB + 1, 5 * MiB)]
MULTIPART_IDS = ["12MiB-in-5MiB-parts", "9MiB-in-8MiB-parts", "5MiB+1-last-part-1-byte"]


def _multipart_etag(data: bytes, part: int) -> str:
    """S3's multipart ETag digest: the MD5 of the parts' binary MD5s (lakeFS records it without ``-<n>``)."""
    digests = b"".join(hashlib.md5(data[i : i + part]).digest() for i in range(0, len(data), part))
    return hashlib.md5(digests).hexdigest()


def _write_multipart(src: RegionClients, repo: str, size: int, part: int, tag: str) -> str:
    path = f"big/{tag}/{size}-in-{part}.parquet"
    data = blob(path, size)
    multipart_upload(
        src.s3,
        repo,
        "main",
        path,
        data,
        part_size=part,
        content_type="application/vnd.apache.parquet",
        metadata={"parts": str(-(-size // part)), "writer": "upload_fileobj"},
    )
    # It really went in parts of that size: lakeFS recorded the multipart ETag, not the content MD5.
    etag = src.s3.head_object(Bucket=repo, Key=f"main/{path}")["ETag"].strip('"')
    assert etag == _multipart_etag(data, part) != hashlib.md5(data).hexdigest(), etag
    return path


@pytest.mark.parametrize(("size", "part"), MULTIPART_SHAPES, ids=MULTIPART_IDS)
def test_multipart_upload_mirrors_exactly(
    size: int,
    part: int,
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    src, dst = clients_for("region-a"), clients_for("region-b")
    repo = new_repo("region-a")
    path = _write_multipart(src, repo, size, part, "one")
    put(src.s3, repo, "main", "small/beside-it.json", b'{"ok": true}', content_type="application/json")
    src.rest.commit(repo, "main", f"a {size}-byte multipart upload in {part}-byte parts")
    head = src.s3.head_object(Bucket=repo, Key=f"main/{path}")
    assert head["ContentLength"] == size and head["ContentType"] == "application/vnd.apache.parquet"
    name = new_mirror(repo, "region-b")

    converge(name, "region-b")
    report = assert_mirror_matches(src, repo, dst, name)
    assert report.bytes_read >= size


def test_multipart_uploads_into_minio_mirror_twice(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    """Every multipart shape into region-c (a MinIO destination), then an incremental round."""
    src, dst = clients_for("region-a"), clients_for("region-c")
    repo = new_repo("region-a")
    for size, part in MULTIPART_SHAPES:
        _write_multipart(src, repo, size, part, "first")
    src.rest.commit(repo, "main", "multipart uploads")
    name = new_mirror(repo, "region-c")
    converge(name, "region-c")
    assert_mirror_matches(src, repo, dst, name)

    _write_multipart(src, repo, 6 * MiB, 5 * MiB, "second")
    src.rest.commit(repo, "main", "one more")
    converge(name, "region-c")
    assert_mirror_matches(src, repo, dst, name)


def test_multipart_upload_mirrors_through_dagster_runs(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    """The reported case (12 MiB in 5 MiB parts) through the Dagster branch_heads and tags assets, into MinIO
    (region-c): the run streams the object's single PUT through a presigned URL."""
    src, dst = clients_for("region-a"), clients_for("region-c")
    repo = new_repo("region-a")
    _write_multipart(src, repo, 12 * MiB, 5 * MiB, "dagster")
    commit = src.rest.commit(repo, "main", "multipart through Dagster")
    src.rest.create_tag(repo, "v1", commit)
    name = new_mirror(repo, "region-c")

    outcome = converge(name, "region-c", via="dagster")
    assert set(outcome.runs) == {"main", ""}
    assert_mirror_matches(src, repo, dst, name)


def test_the_reported_case_through_the_cli_from_a_local_blockstore(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    config_path: Callable[[str], Path],
) -> None:
    """As the user reported it: `lakefs-mirror sync --once` (a real process) on a repository whose 12 MiB
    object boto3 uploaded in 5 MiB parts, here on a source lakeFS with the local blockstore (which computes
    the multipart ETag itself), mirrored onto MinIO; the JSON says how every object was checked."""
    src, dst = clients_for("region-b"), clients_for("region-a")
    repo = new_repo("region-b")
    _write_multipart(src, repo, 12 * MiB, 5 * MiB, "cli")
    put(src.s3, repo, "main", "small/one-part.csv", b"a,b\n1,2\n", content_type="text/csv")
    src.rest.commit(repo, "main", "one object in parts, one in one piece")
    name = new_mirror(repo, "region-a", source_region="region-b")

    cli = Path(sys.executable).with_name("lakefs-mirror")
    run = subprocess.run(
        [str(cli), "--config", str(config_path("region-a")), "sync", "--once", "--mirror", name, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [result] = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    [main] = [r for r in result["refs"] if (r["kind"], r["name"]) == ("branch", "main")]
    checks = {k: v for k, v in main["stats"].items() if k.startswith("objects_checked_")}
    assert checks == {"objects_checked_md5": 1, "objects_checked_multipart": 1, "objects_checked_size": 0}, checks
    assert_mirror_matches(src, repo, dst, name)
