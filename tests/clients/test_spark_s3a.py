"""A Parquet dataset written by Spark through lakeFS's S3 gateway (``s3a://``) mirrors commit-exactly.

Spark is the client most lakeFS users write with, and S3A writes differently from boto3: renames are copies,
files above ``fs.s3a.multipart.threshold`` are uploaded in parts (lakeFS then records the multipart ETag, which
is not an MD5 of the bytes), and it sends conditional and checksum headers of its own. The dataset is written
into ``region-a`` (lakeFS on MinIO), committed through the lakeFS API, mirrored into ``region-b`` (local disk)
and ``region-c`` (another MinIO), and read back by Spark through each mirror's own gateway.

The Spark session is this module's own: it must start with the hadoop-aws jars on the JVM's classpath
(``devenv.hadoop_jars``, cached by ``scripts/dev test``), and a JVM's classpath is fixed when it starts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from lakefs_mirror_devenv import Environment, LakeFSRegion

from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService

pytestmark = pytest.mark.integration

SOURCE = "region-a"
MIRROR_REGIONS = ("region-b", "region-c")
DATASET = "tables/events"
PART_SIZE = 5 * 1024 * 1024  # S3's smallest part: files above it are uploaded in parts
BIG_ROWS, BIG_DIGESTS = 12_000, 8  # rows x 8 SHA-512 hex digests = 12 MB of Parquet: three parts

# Settings every bucket gets, whichever lakeFS it is on (the per-bucket endpoint and keys come on top).
S3A_COMMON = {
    "fs.s3a.path.style.access": "true",  # lakeFS's gateway takes the repository as the first path segment
    "fs.s3a.connection.ssl.enabled": "false",
    # Off by default, pinned because lakeFS's gateway refuses what they turn on: with either, the SDK streams
    # the body as aws-chunked with a trailing checksum (x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER),
    # which lakeFS's SigV4 check cannot parse ("encoding/hex: invalid byte"), so every PUT gets 403 AccessDenied.
    "fs.s3a.checksum.generation": "false",
    "fs.s3a.create.checksum.algorithm": "NONE",
    # Only the keys given: without this, a missing key falls through the default chain to EC2 metadata probes.
    "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "fs.s3a.multipart.size": "5M",
    "fs.s3a.multipart.threshold": "5M",
    # A failure should fail the test within seconds, not after S3A's minutes of retries.
    "fs.s3a.retry.limit": "2",
    "fs.s3a.retry.interval": "200ms",
    "fs.s3a.attempts.maximum": "2",
    "fs.s3a.connection.establish.timeout": "5s",
    "fs.s3a.connection.timeout": "30s",
}


def s3a_bucket_settings(bucket: str, region: LakeFSRegion) -> dict[str, str]:
    """S3A's per-bucket settings: ``bucket`` (a repository) is read through ``region``'s gateway."""
    prefix = f"fs.s3a.bucket.{bucket}."
    return {
        prefix + "endpoint": region.endpoint,
        prefix + "access.key": region.access_key_id,
        prefix + "secret.key": region.secret_access_key,
    }


@pytest.fixture(scope="module")
def s3a_spark(lakefs_env: Environment, spark: Any) -> Any:
    """The suite's SparkSession (hadoop-aws on its classpath), S3A pointed at the source region's gateway."""
    source = lakefs_env.region(SOURCE)
    settings = {
        **S3A_COMMON,
        "fs.s3a.endpoint": source.endpoint,
        "fs.s3a.access.key": source.access_key_id,
        "fs.s3a.secret.key": source.secret_access_key,
    }
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in settings.items():
        hadoop_conf.set(key, value)
    return spark


def gateway(region: LakeFSRegion) -> Any:
    """boto3 on ``region``'s S3 gateway, as a user would configure it."""
    return region.s3_gateway_client()


def listed(s3: Any, bucket: str, prefix: str) -> dict[str, tuple[str, int]]:
    """Every key under ``prefix`` with its listed ETag and size."""
    out: dict[str, tuple[str, int]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = (obj["ETag"], obj["Size"])
    return out


def rows(df: Any) -> list[tuple[Any, ...]]:
    """The DataFrame's rows sorted by id, the payload as its SHA-256 (compared in full, collected small)."""
    from pyspark.sql import functions as F

    return [
        tuple(r)
        for r in df.select("id", "day", "value", F.sha2("payload", 256).alias("payload_sha256")).orderBy("id").collect()
    ]


def test_spark_dataset_reads_back_identical_through_every_mirror_gateway(
    s3a_spark: Any,
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    service_for: Callable[[str], ReplicationService],
    unique_name: Callable[[str], str],
) -> None:
    from pyspark.sql import functions as F

    spark = s3a_spark
    source = lakefs_env.region(SOURCE)
    src = client_for(SOURCE)
    repo = unique_name("spark")
    src.create_repository(repo, source.namespace_for(repo))
    url = f"s3a://{repo}/main/{DATASET}"

    # One job, two tasks: 3000 rows in two partitions (two small files), and one file of ~12 MB of hex digests,
    # which Parquet cannot compress, in a third: S3A uploads that one in parts.
    def rows_of(ids: Any, day: Any, digests: int) -> Any:
        key = F.col("id").cast("string")
        return ids.select(
            "id",
            day.alias("day"),
            ((F.col("id") * 7) % 1000 / 10).alias("value"),
            F.concat(*(F.sha2(F.concat(key, F.lit(f"/{i}")), 512) for i in range(digests))).alias("payload"),
        )

    small = rows_of(spark.range(0, 3000, 1, 1), F.when(F.col("id") % 2 == 0, "2024-01-01").otherwise("2024-01-02"), 1)
    big = rows_of(spark.range(3000, 3000 + BIG_ROWS, 1, 1), F.lit("2024-01-03"), BIG_DIGESTS)
    small.unionByName(big).write.partitionBy("day").parquet(url)

    # The premise: one object was stored in parts, so its ETag (lakeFS's checksum) is not its bytes' MD5.
    src_s3 = gateway(source)
    prefix = f"main/{DATASET}/"
    src_objects = listed(src_s3, repo, prefix)
    [big_key] = [k for k in src_objects if "/day=2024-01-03/" in k and k.endswith(".parquet")]
    assert src_objects[big_key][1] > 2 * PART_SIZE, src_objects[big_key]
    big_bytes = src_s3.get_object(Bucket=repo, Key=big_key)["Body"].read()
    assert src_objects[big_key][0].strip('"') != hashlib.md5(big_bytes).hexdigest(), "not uploaded in parts"
    assert len([k for k in src_objects if k.endswith(".parquet")]) >= 3, sorted(src_objects)

    head = src.commit(repo, "main", "events written by Spark through s3a://").id
    expected = spark.read.parquet(url)
    expected_rows = rows(expected)
    assert len(expected_rows) == 3000 + BIG_ROWS

    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    for dst in MIRROR_REGIONS:
        region = lakefs_env.region(dst)
        mirror = unique_name("mirror")
        service_for(SOURCE).create_mirror(
            source_repository=repo, name=mirror, region=dst, storage_namespace=region.namespace_for(mirror)
        )
        [result] = service_for(dst).sync(name=mirror)
        assert result.ok, f"sync into {dst}: {json.dumps(result.to_json(), indent=1)}"
        assert client_for(dst).get_branch_head(mirror, "main") == head, dst

        # Every key at the mirror's gateway, with the source's ETag and size.
        assert listed(gateway(region), mirror, prefix) == src_objects, dst

        # Spark reads the dataset back through the mirror region's gateway (per-bucket S3A settings).
        for key, value in s3a_bucket_settings(mirror, region).items():
            hadoop_conf.set(key, value)
        back = spark.read.parquet(f"s3a://{mirror}/main/{DATASET}")
        assert back.schema == expected.schema, dst
        assert rows(back) == expected_rows, dst
