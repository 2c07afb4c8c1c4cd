"""Commit-exact mirroring between real lakeFS regions, for every store pair the product supports."""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config

from lakefs_mirror_dagster.lakefs import LakeFSForbidden
from lakefs_mirror_dagster.mirrors import MirrorState

from .conftest import assert_mirror_equals_source, assert_ref_complete, content

PAIRS = [("region-a", "region-b"), ("region-a", "region-c"), ("region-b", "region-a")]
PAIR_IDS = ["minio-to-local", "minio-to-other-minio", "local-to-minio"]


def _populate(src, repo: str) -> dict[str, bytes]:
    """Many commits on main, a feature branch merged back, a deleted object, and tags."""
    expected: dict[str, bytes] = {}
    for i in range(8):
        key = f"tables/events/part-{i:03}.parquet"
        expected[key] = content(key, 100 + i)
        src.upload_object(repo, "main", key, expected[key])
        src.commit(repo, "main", f"add part {i}", metadata={"batch": str(i)})
    src.create_tag(repo, "v0.1", "main")
    src.create_branch(repo, "feature", "main")
    for i in range(3):
        key = f"tables/users/u-{i}.json"
        expected[key] = content(key, 50)
        src.upload_object(repo, "feature", key, expected[key])
        src.commit(repo, "feature", f"users {i}")
    src.delete_object(repo, "main", "tables/events/part-000.parquet")
    src.commit(repo, "main", "drop part 0")
    del expected["tables/events/part-000.parquet"]
    src.merge(repo, "feature", "main")
    src.create_tag(repo, "v0.2", "main")
    return expected


@pytest.mark.parametrize(("source_region", "mirror_region"), PAIRS, ids=PAIR_IDS)
def test_every_branch_and_tag_is_mirrored_commit_exactly(
    source_region, mirror_region, lakefs_env, service_for, unique_name
) -> None:
    src_svc, dst_svc = service_for(source_region), service_for(mirror_region)
    src, dst = src_svc.client(source_region), dst_svc.client(mirror_region)
    repo, mirror_name = unique_name("repo"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region(source_region).namespace_for(repo))
    expected = _populate(src, repo)

    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=mirror_name,
        region=mirror_region,
        storage_namespace=lakefs_env.region(mirror_region).namespace_for(mirror_name),
    )
    assert mirror.state == MirrorState.PENDING
    [result] = dst_svc.sync(name=mirror_name)
    assert result.ok, result.to_json()
    assert {(r.kind, r.name, r.action) for r in result.refs} == {
        ("branch", "main", "created"),
        ("branch", "feature", "created"),
        ("tag", "v0.1", "created"),
        ("tag", "v0.2", "created"),
    }
    assert_mirror_equals_source(src, repo, dst, mirror_name)
    assert dst.get_repository(mirror_name).read_only

    # Every object reads back identical, through the API and through the mirror region's S3 gateway.
    region = lakefs_env.region(mirror_region)
    gateway = boto3.client(
        "s3",
        endpoint_url=region.endpoint,
        aws_access_key_id=region.access_key_id,
        aws_secret_access_key=region.secret_access_key,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}),
    )
    assert sorted(o.path for o in dst.list_objects(mirror_name, "main")) == sorted(expected)
    for key, data in expected.items():
        assert dst.get_object(mirror_name, "main", key) == data
        assert gateway.get_object(Bucket=mirror_name, Key=f"main/{key}")["Body"].read() == data
    # The tag taken before the delete still sees the deleted object.
    assert dst.get_object(mirror_name, "v0.1", "tables/events/part-000.parquet") == content(
        "tables/events/part-000.parquet", 100
    )

    with pytest.raises(LakeFSForbidden):
        dst.upload_object(mirror_name, "main", "intruder.txt", b"no")
    with pytest.raises(LakeFSForbidden):
        dst.commit(mirror_name, "main", "no")

    # A second pass changes nothing and reads nothing new.
    [again] = dst_svc.sync(name=mirror_name)
    assert {r.action for r in again.refs} == {"unchanged"}
    assert next(dst_svc.my_mirrors(name=mirror_name)).state == MirrorState.ACTIVE


def test_branch_creation_deletion_and_reset_are_followed(lakefs_env, service_for, unique_name) -> None:
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    src, dst = svc_a.client("region-a"), svc_b.client("region-b")
    repo, name = unique_name("repo"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "a", b"a")
    first = src.commit(repo, "main", "a")
    src.upload_object(repo, "main", "b", b"b")
    src.commit(repo, "main", "b")
    src.create_branch(repo, "to-delete", "main")
    src.create_branch(repo, "to-reset", "main")
    svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    assert svc_b.sync(name=name)[0].ok
    assert_mirror_equals_source(src, repo, dst, name)

    src.delete_branch(repo, "to-delete")
    src.hard_reset_branch(repo, "to-reset", first.id)
    src.create_branch(repo, "new-branch", first.id)
    [result] = svc_b.sync(name=name)
    actions = {r.name: r.action for r in result.refs}
    assert actions == {"main": "unchanged", "to-delete": "deleted", "to-reset": "reset", "new-branch": "created"}
    assert_mirror_equals_source(src, repo, dst, name)
    # The mirrors database follows too: the deleted branch is gone from the per-branch state.
    mirror = next(svc_b.my_mirrors(name=name))
    assert {b.branch for b in svc_b.mirrors.get_branches(mirror.id)} == {"main", "to-reset", "new-branch"}
    assert_ref_complete(svc_b, name, first.id)


def test_large_object_is_copied_with_multipart(lakefs_env, service_for, unique_name) -> None:
    svc_a, svc_c = service_for("region-a"), service_for("region-c")
    src, dst = svc_a.client("region-a"), svc_c.client("region-c")
    repo, name = unique_name("big"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    big = content("big", 1024 * 1024) * 129  # 129 MiB, above the 128 MiB multipart threshold
    src.upload_object(repo, "main", "big.bin", big)
    src.commit(repo, "main", "big object")
    svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(name),
    )
    [result] = svc_c.sync(name=name)
    assert result.ok, result.to_json()
    main = next(r for r in result.refs if r.name == "main")
    assert main.stats.bytes_copied == len(big)
    assert dst.get_object(name, "main", "big.bin") == big
    # MinIO reports a multipart ETag ("<md5>-<parts>") for objects assembled from parts.
    minio = lakefs_env.minio["minio-c"].s3_client()
    address = dst.stat_object(name, "main", "big.bin").physical_address
    bucket, key = address.removeprefix("s3://").split("/", 1)
    assert "-" in minio.head_object(Bucket=bucket, Key=key)["ETag"]
