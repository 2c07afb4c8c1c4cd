"""Checking copied bytes against the checksum lakeFS recorded: content MD5, multipart ETags with and
without their ``-<parts>`` suffix, part sizes found by reading again, and what falls back to size."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lakefs_mirror_dagster.storage import (
    Check,
    ChecksumMismatchError,
    CopyTask,
    LocalBlockstore,
    TransferPool,
    at_rest_check,
    copy_object,
)
from lakefs_mirror_dagster.storage.checksums import (
    ExpectedContent,
    RecordedChecksum,
    VerifyingReader,
    candidate_part_sizes,
)

from .conftest import S3ServerLike, s3_store_for

MiB = 1024 * 1024


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def multipart(data: bytes, part_size: int, *, suffix: bool = False) -> str:
    """The multipart ETag S3 (and lakeFS's local blockstore) compute for ``data`` uploaded in parts."""
    parts = [data[i : i + part_size] for i in range(0, len(data), part_size)] or [b""]
    digest = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    return f"{digest}-{len(parts)}" if suffix else digest


def read_through(data: bytes, expected: ExpectedContent, chunk: int = 1 << 20) -> VerifyingReader:
    reader = VerifyingReader(io.BytesIO(data), expected, uri="test://o")
    while reader.read(chunk):
        pass
    reader.complete()
    return reader


def test_recorded_checksums_are_split_into_digest_and_parts() -> None:
    digest = md5(b"x")
    assert RecordedChecksum.parse(f'"{digest.upper()}"') == RecordedChecksum(digest, None)
    assert RecordedChecksum.parse(f"{digest}-3") == RecordedChecksum(digest, 3)
    assert RecordedChecksum.parse("sha256:abc") == RecordedChecksum(None)
    assert RecordedChecksum.parse(None) == RecordedChecksum(None)
    assert RecordedChecksum(digest).may_be_content_md5 and not RecordedChecksum(digest, 3).may_be_content_md5
    # without a suffix, only an object larger than S3's smallest part can have been written in parts
    assert not RecordedChecksum(digest).may_be_multipart(5 * MiB)
    assert RecordedChecksum(digest).may_be_multipart(5 * MiB + 1)


def test_part_sizes_tried_follow_the_suffix_and_the_size() -> None:
    size = 12 * MiB
    assert candidate_part_sizes(RecordedChecksum("0" * 32), 4 * MiB, discover=True) == ()  # one part at most
    assert candidate_part_sizes(RecordedChecksum("0" * 32), size) == ()  # first read: nothing to guess from
    found = candidate_part_sizes(RecordedChecksum("0" * 32), size, discover=True)
    assert found == (5 * MiB, 8 * MiB, 10 * MiB)  # common sizes that give two parts or more
    # "-3" allows only part sizes that cut 12 MiB into exactly three parts, common or not
    assert candidate_part_sizes(RecordedChecksum("0" * 32, 3), size) == (5 * MiB, 4 * MiB)
    hinted = candidate_part_sizes(RecordedChecksum("0" * 32), size, hints=(6 * MiB, 20 * MiB))
    assert hinted == (6 * MiB,)


@pytest.mark.parametrize("part_size", [5 * MiB, 8 * MiB])
def test_a_multipart_checksum_without_its_suffix_is_matched_by_reading_again(part_size: int) -> None:
    """What lakeFS's S3 gateway records for ``upload_fileobj`` with 5 MiB parts: the case users reported."""
    data = os.urandom(12 * MiB)
    recorded = multipart(data, part_size)
    with pytest.raises(ChecksumMismatchError, match="nothing was stored") as first:
        read_through(data, ExpectedContent(recorded, len(data)))
    assert first.value.content_md5 == md5(data)
    again = read_through(data, ExpectedContent(recorded, len(data), discover=True, previous_md5=md5(data)))
    assert (again.check, again.part_size) == (Check.MULTIPART_MD5, part_size)
    hinted = read_through(data, ExpectedContent(recorded, len(data), part_sizes=(part_size,)))
    assert (hinted.check, hinted.part_size) == (Check.MULTIPART_MD5, part_size)


def test_last_part_of_one_byte_and_suffixed_checksums_are_matched() -> None:
    data = os.urandom(5 * MiB + 1)
    assert read_through(data, ExpectedContent(multipart(data, 5 * MiB, suffix=True), len(data))).check == (
        Check.MULTIPART_MD5
    )
    discovered = read_through(data, ExpectedContent(multipart(data, 5 * MiB), len(data), discover=True))
    assert discovered.part_size == 5 * MiB


def test_single_part_and_one_part_multipart_and_empty_objects() -> None:
    data = b"hello world"
    assert read_through(data, ExpectedContent(md5(data), len(data))).check == Check.MD5
    assert read_through(data, ExpectedContent(multipart(data, 5 * MiB), len(data))).check == Check.MULTIPART_MD5
    assert read_through(b"", ExpectedContent(md5(b""), 0)).check == Check.MD5
    assert read_through(data, ExpectedContent("not-an-md5", len(data))).check == Check.SIZE


def test_damaged_bytes_are_refused_where_a_check_exists() -> None:
    small = os.urandom(MiB)
    damaged = bytearray(small)
    damaged[7] ^= 1
    for discover in (False, True):  # a one-part object is refused however often it is read
        with pytest.raises(ChecksumMismatchError, match="hash to MD5"):
            read_through(bytes(damaged), ExpectedContent(md5(small), len(small), discover=discover))
    big = os.urandom(11 * MiB)
    recorded = multipart(big, 5 * MiB)
    rotten = bytearray(big)
    rotten[6 * MiB] ^= 1
    # damage on one read only: the two reads disagree, so the object is never taken by size
    with pytest.raises(ChecksumMismatchError, match="multipart ETag"):
        read_through(bytes(rotten), ExpectedContent(recorded, len(big), discover=True, previous_md5=md5(big)))
    # a suffixed multipart checksum of the wrong bytes is caught wherever its part size can be found
    with pytest.raises(ChecksumMismatchError):
        read_through(bytes(rotten), ExpectedContent(multipart(big, 5 * MiB), len(big), part_sizes=(5 * MiB,)))


def test_uneven_parts_fall_back_to_size_only_when_two_reads_agree() -> None:
    data = os.urandom(13 * MiB)
    parts = [data[: 6 * MiB], data[6 * MiB : 13 * MiB]]  # uneven: no single part size explains it
    recorded = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    with pytest.raises(ChecksumMismatchError):
        read_through(data, ExpectedContent(recorded, len(data), discover=True, previous_md5=None))
    agreed = read_through(data, ExpectedContent(recorded, len(data), discover=True, previous_md5=md5(data)))
    assert agreed.check == Check.SIZE


def test_at_rest_checks_compare_only_what_is_comparable() -> None:
    data = os.urandom(6 * MiB)
    whole, parts = md5(data), multipart(data, 5 * MiB)
    assert at_rest_check(whole, len(data), whole) == Check.MD5
    assert at_rest_check(parts, len(data), f"{parts}-2") == Check.MULTIPART_MD5  # same layout at the store
    assert at_rest_check(multipart(data, 8 * MiB), len(data), whole) == Check.MULTIPART_MD5  # one part
    assert at_rest_check(parts, len(data), whole) == Check.SIZE  # a multipart checksum vs the MD5 of the whole
    assert at_rest_check(whole, len(data), None) == Check.SIZE  # local files have no ETag
    assert at_rest_check(md5(b"a"), 1, md5(b"b")) is None  # one part each: proof the content differs
    assert at_rest_check(f"{parts}-2", len(data), md5(b"other")) == Check.SIZE


def test_the_pool_reads_a_multipart_object_again_once_then_remembers_its_part_size(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "src"), LocalBlockstore(root=tmp_path / "dst")
    objects = {f"local://ns/o{i}": os.urandom(11 * MiB + i) for i in range(3)}
    for uri, data in objects.items():
        src.write_bytes(uri, data)
    reads: list[str] = []
    original = src.open_read

    def open_read(uri: str, *, size: int | None = None):  # type: ignore[no-untyped-def]
        reads.append(uri)
        return original(uri, size=size)

    src.open_read = open_read  # type: ignore[method-assign]
    pool = TransferPool(concurrency=1, sleep=lambda _s: pytest.fail("a part-size search must not back off"))
    tasks = [CopyTask(src, u, dst, u, len(d), multipart(d, 5 * MiB)) for u, d in objects.items()]
    summary = pool.run(tasks)
    assert summary.failed == [] and summary.checks == {"multipart_md5": 3}
    assert len(reads) == 4, "only the first object should be read twice"
    for uri, data in objects.items():
        assert dst.read_bytes(uri) == data


def test_copy_object_reports_the_check(tmp_path: Path) -> None:
    src, dst = LocalBlockstore(root=tmp_path / "a"), LocalBlockstore(root=tmp_path / "b")
    src.write_bytes("local://ns/o", b"abc")
    result = copy_object(src, "local://ns/o", dst, "local://ns/o", size=3, etag=md5(b"abc"))
    assert (result.method, result.check) == ("stream", Check.MD5)


@pytest.mark.integration
def test_minio_multipart_objects_tell_their_part_size_and_match_their_etag(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], tmp_path: Path
) -> None:
    """boto3's ``upload_fileobj`` in 5 MiB parts into a real MinIO: the store's ETag is the multipart ETag
    computed here, HEAD of part 1 gives the part size, and a copy with lakeFS's suffix-less checksum finds
    the layout from the store on its second read."""
    from boto3.s3.transfer import TransferConfig

    bucket = make_bucket("mpu")
    data = os.urandom(12 * MiB + 1)
    s3_server.s3_client().upload_fileobj(
        io.BytesIO(data), bucket, "o", Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    )
    s3 = s3_store_for(s3_server)
    uri = f"s3://{bucket}/o"
    stat = s3.stat(uri)
    assert stat is not None and stat.etag == multipart(data, 5 * MiB, suffix=True)
    assert s3.part_size(uri) == 5 * MiB
    s3.write_bytes(f"s3://{bucket}/single", b"one part")
    assert s3.part_size(f"s3://{bucket}/single") is None

    local = LocalBlockstore(root=tmp_path)
    recorded = multipart(data, 5 * MiB)  # what lakeFS's gateway records: the ETag without "-3"
    with pytest.raises(ChecksumMismatchError):
        copy_object(s3, uri, local, "local://ns/o", size=len(data), etag=recorded)
    found = copy_object(
        s3, uri, local, "local://ns/o", size=len(data), etag=recorded, discover=True, previous_md5=md5(data)
    )
    assert (found.check, found.part_size) == (Check.MULTIPART_MD5, 5 * MiB)
    assert local.read_bytes("local://ns/o") == data
