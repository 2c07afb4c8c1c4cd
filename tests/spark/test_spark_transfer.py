"""Object transfer in Spark tasks, against real lakeFS regions, MinIO and a local Spark."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lakefs_mirror_dagster.replication import metadata_uri, read_metarange
from lakefs_mirror_dagster.storage import join_namespace
from tests.replication.conftest import assert_mirror_equals_source, assert_ref_complete, content

from .synthetic import object_bytes, populate_big_branch

FAILPOINT_ENV = "LAKEFS_MIRROR_FAILPOINT"


def _ref(result: Any, name: str) -> Any:
    return next(r for r in result.refs if r.name == name)


def _mirror_of(lakefs_env, src_service, repo: str, name: str) -> Any:
    return src_service.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )


@pytest.mark.timeout(600)
def test_twenty_thousand_objects_in_four_ranges_are_mirrored_through_spark(
    lakefs_env, client_for, service_for, spark_service, unique_name
) -> None:
    src = client_for("region-a")
    repo, name = unique_name("bigrepo"), unique_name("bigmirror")
    namespace = lakefs_env.region("region-a").namespace_for(repo)
    src.create_repository(repo, namespace)
    commit, objects = populate_big_branch(
        src, lakefs_env.minio["minio-a"], repo, namespace, "big", ranges=4, per_range=5000
    )
    assert len(objects) == 20_000
    assert len(read_metarange(service_for("region-a").destination_store(), namespace, commit.metarange_id)) == 4

    mirror = _mirror_of(lakefs_env, service_for("region-a"), repo, name)
    service = spark_service("region-b", source_store_of="region-a", transfer_threshold_objects=5000)
    [result] = service.sync(name=name)

    assert result.ok, result.to_json()
    big = _ref(result, "big")
    assert (big.action, big.mirror_commit) == ("created", commit.id)
    assert big.stats.transfer_path == "spark"
    assert big.stats.objects_copied == 20_000 and big.stats.failed_object_count == 0
    assert big.stats.bytes_copied == sum(size for _, size in objects.values())
    assert big.stats.ranges_transferred == 4
    transferer = service.plugs.uses[name].transferer
    assert transferer.choices["spark"] == 1 and transferer.last_object_count == 20_000
    spark_path: Any = transferer.spark
    assert sorted(s.objects for s in spark_path.summaries) == [5000] * 4

    # The mirror validates from its own storage, every object is there with the source's bytes, and the
    # mirror's lakeFS serves them.
    assert_ref_complete(service, name, commit.id)
    assert_mirror_equals_source(src, repo, client_for("region-b"), name)
    store = service.destination_store(mirror.storage_id)
    for path, (address, size) in objects.items():
        assert store.read_bytes(join_namespace(mirror.storage_namespace, address)) == object_bytes(path, size), path
    dst = client_for("region-b")
    for path in random.Random(8).sample(sorted(objects), 20):
        assert dst.get_object(name, "big", path) == object_bytes(path, objects[path][1])

    [again] = service.sync(name=name)
    assert {r.action for r in again.refs} == {"unchanged"}


@pytest.mark.timeout(600)
def test_a_task_killed_part_way_blocks_promotion_and_the_next_run_converges(
    lakefs_env, client_for, service_for, spark_service, spark, unique_name
) -> None:
    src = client_for("region-a")
    repo, name = unique_name("killrepo"), unique_name("killmirror")
    namespace = lakefs_env.region("region-a").namespace_for(repo)
    src.create_repository(repo, namespace)
    commit, objects = populate_big_branch(
        src, lakefs_env.minio["minio-a"], repo, namespace, "big", ranges=3, per_range=400
    )
    mirror = _mirror_of(lakefs_env, service_for("region-a"), repo, name)
    service = spark_service("region-b", source_store_of="region-a", transfer_threshold_objects=100)
    store = service.destination_store(mirror.storage_id)
    range_ids = read_metarange(service_for("region-a").destination_store(), namespace, commit.metarange_id)

    def present() -> int:
        return sum(store.stat(join_namespace(mirror.storage_namespace, a)) is not None for a, _ in objects.values())

    # The Python worker running a transfer task dies (like SIGKILL) after its 150th object copy. Spark
    # hands sc.environment to the workers of jobs started from now on.
    sc = spark.sparkContext
    sc.environment[FAILPOINT_ENV] = "after_object_copy:150"
    try:
        [first] = service.sync(name=name)
    finally:
        sc.environment.pop(FAILPOINT_ENV, None)

    big = _ref(first, "big")
    assert big.action == "blocked" and big.mirror_commit is None
    assert "Spark transfer of 3 range(s) failed" in (big.error or "")
    assert "big" not in {b.id for b in client_for("region-b").list_branches(name)}
    copied_before = present()
    assert 0 < copied_before < len(objects)  # the work stopped part-way
    missing_range_files = [r for r in range_ids if store.stat(metadata_uri(mirror.storage_namespace, r)) is None]
    assert missing_range_files  # at least the killed task's range has no range file

    [second] = service.sync(name=name)
    assert second.ok, second.to_json()
    big = _ref(second, "big")
    assert (big.action, big.mirror_commit) == ("created", commit.id)
    # Resumed: what arrived is not copied again. (Tasks of the failed job that Spark had not yet cancelled
    # may have copied a few more objects after the count above, so at least that many are skipped.)
    assert big.stats.objects_skipped >= copied_before
    assert big.stats.objects_copied + big.stats.objects_skipped == len(objects)
    assert present() == len(objects)
    assert_ref_complete(service, name, commit.id)


@pytest.mark.timeout(300)
def test_small_commits_stay_in_process_and_big_ones_read_through_the_source_api_on_spark(
    lakefs_env, client_for, service_for, spark_service, unique_name
) -> None:
    src = client_for("region-a")
    repo, name = unique_name("threshrepo"), unique_name("threshmirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    for i in range(3):
        src.upload_object(repo, "main", f"t/small-{i}.csv", b"small %d" % i)
    src.commit(repo, "main", "three objects")
    _mirror_of(lakefs_env, service_for("region-a"), repo, name)

    sessions: list[int] = []
    service = spark_service("region-b", transfer_threshold_objects=25)  # no source_stores: the lakeFS API
    real_session = service.plugs.session

    def counting_session() -> Any:
        sessions.append(1)
        return real_session()

    service.plugs.session = counting_session
    [small] = service.sync(name=name)
    assert small.ok, small.to_json()
    main = _ref(small, "main")
    assert main.stats.transfer_path == "in_process" and main.stats.objects_copied == 3
    assert service.plugs.uses[name].transferer.last_choice == "in_process"
    assert not sessions  # a small commit never starts (or asks for) Spark

    expected = {f"t/part-{i:03}.csv": content(f"{repo}-{i}", 100 + i) for i in range(30)}
    for key, data in expected.items():
        src.upload_object(repo, "main", key, data)
    src.commit(repo, "main", "thirty objects")
    [big] = service.sync(name=name)
    assert big.ok, big.to_json()
    main = _ref(big, "main")
    assert main.action == "advanced" and main.stats.transfer_path == "spark"
    # the rewritten range holds all 33: the 3 of the validated range it replaces are not even looked at
    assert (main.stats.objects_copied, main.stats.objects_skipped, main.stats.objects_unchanged) == (30, 0, 3)
    assert service.plugs.uses[name].transferer.choices == {"spark": 1} and sessions
    assert_ref_complete(service, name, src.get_branch_head(repo, "main"))
    dst = client_for("region-b")
    assert {k: dst.get_object(name, "main", k) for k in expected} == expected

    # One key inserted among the 33: lakeFS rewrites their range, and only the one new entry counts
    # towards the threshold, so the whole 34-entry range does not go to Spark.
    src.upload_object(repo, "main", "t/part-010.csv.v2", b"between two keys")
    src.commit(repo, "main", "one key in the middle")
    [one] = service.sync(name=name)
    assert one.ok, one.to_json()
    main = _ref(one, "main")
    assert main.stats.transfer_path == "in_process" and main.stats.objects_copied == 1
    assert main.stats.objects_unchanged == 33
    assert service.plugs.uses[name].transferer.last_object_count == 1
