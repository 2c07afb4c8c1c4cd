"""A long history's first sync asks the destination lakeFS and the mirrors database a few questions per window of
commits, not a few per commit, and leaves every commit of it complete at the mirror."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import history, metadata_uri, read_metarange
from lakefs_mirror_dagster.replication.history import VALIDATION_WINDOW
from lakefs_mirror_dagster.storage import ObjectStat
from lakefs_mirror_dagster.storage.s3 import S3Blockstore

from .conftest import (
    assert_mirror_equals_source,
    assert_ref_complete,
    content,
    lakefs_operation_count,
    lakefs_operations,
)

COMMITS = 70
RANGES_COMMITS = 20


def test_a_long_history_is_synced_with_a_few_questions_per_window(  # type: ignore[no-untyped-def]
    lakefs_env, service_for, unique_name, monkeypatch
) -> None:
    src_svc, dst_svc = service_for("region-a"), service_for("region-c")
    src = src_svc.client("region-a")
    repo, mirror_name = unique_name("history"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    commits = []
    for i in range(COMMITS):
        src.upload_object(repo, "main", f"log/{i:04d}.txt", content(f"commit {i}"))
        commits.append(src.commit(repo, "main", f"commit {i}").id)
    src_svc.create_mirror(
        source_repository=repo,
        name=mirror_name,
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(mirror_name),
    )
    marks: list[Mapping[str, str]] = []
    mark: Callable[..., Any] = dst_svc.mirrors.mark_ranges_validated

    def counted(namespace: str, fingerprints: Mapping[str, str]) -> int:
        marks.append(dict(fingerprints))
        return int(mark(namespace, fingerprints))

    dst_svc.mirrors.mark_ranges_validated = counted  # type: ignore[method-assign]
    namespace = lakefs_env.region("region-c").namespace_for(mirror_name)
    looked_at: Counter[str] = Counter()  # HEADs of each of the mirror's objects (not its range files)
    real_stat = S3Blockstore.stat

    def stat(store: S3Blockstore, uri: str) -> ObjectStat | None:
        if uri.startswith(namespace) and "/_lakefs/" not in uri:
            looked_at[uri] += 1
        return real_stat(store, uri)

    monkeypatch.setattr(S3Blockstore, "stat", stat)
    destination = lakefs_env.region("region-c").endpoint
    before = lakefs_operation_count(destination, "GetCommit")
    [result] = dst_svc.sync(name=mirror_name)
    asked = lakefs_operation_count(destination, "GetCommit") - before
    assert result.ok, result.to_json()

    # which commits the mirror lacks: found by galloping down the history, not asked commit by commit
    assert asked <= 2 * math.log2(COMMITS) + 4, f"{asked} GetCommit requests at the destination for {COMMITS} commits"
    # validation marks: ranges, then metaranges, once per window of metaranges
    windows = math.ceil((COMMITS + 1) / VALIDATION_WINDOW)
    assert len(marks) <= 2 * windows, f"{len(marks)} mark transactions for {windows} windows"
    # each object looked for before its copy and by validation; one copied ahead is not looked for again
    assert len(looked_at) == COMMITS and max(looked_at.values()) <= 2, looked_at.most_common(3)
    marked = {f for m in marks for f in m}
    for commit_id in commits:  # every commit's metarange validated, and complete at the mirror
        commit = src.get_commit(repo, commit_id)
        assert commit.metarange_id in marked, commit_id
        assert_ref_complete(dst_svc, mirror_name, commit_id)
    assert_mirror_equals_source(src, repo, dst_svc.client("region-c"), mirror_name)

    [again] = dst_svc.sync(name=mirror_name)
    assert again.ok and all(r.action == "unchanged" for r in again.refs), again.to_json()


def test_an_incremental_in_a_new_process_transfers_only_the_new_range(  # type: ignore[no-untyped-def]
    lakefs_env, service_for, config_path, unique_name, monkeypatch, caplog
) -> None:
    """Each of these commits adds a range, so the newest metarange lists one range per commit: a new process
    asks the mirrors database about all of them, however few files it asks about ahead, and copies only the
    range the new commit adds, reading from the source only the files it does not have."""
    monkeypatch.setattr(history, "LOOK_AHEAD_FILES", 4)
    src_svc, dst_svc = service_for("region-a"), service_for("region-c")
    src = src_svc.client("region-a")
    repo, mirror_name = unique_name("ranges"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    for i in range(RANGES_COMMITS):
        src.upload_object(repo, "main", f"log/{i:04d}.txt", content(f"commit {i}"))
        src.commit(repo, "main", f"commit {i}")
    src_svc.create_mirror(
        source_repository=repo,
        name=mirror_name,
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(mirror_name),
    )
    [first] = dst_svc.sync(name=mirror_name)
    assert first.ok, first.to_json()
    head = src.get_commit(repo, src.get_branch_head(repo, "main"))
    listed = len(read_metarange(dst_svc.destination_store(""), _namespace(dst_svc, mirror_name), head.metarange_id))
    assert listed > 4 * 2, f"the newest metarange lists {listed} ranges: too few to ask about beyond the look-ahead"

    src.upload_object(repo, "main", "log/more.txt", content("one more"))
    src.commit(repo, "main", "one more")
    fresh = ReplicationService(load_config(config_path("region-c"), env={}))
    source = lakefs_env.region("region-a").endpoint
    before = lakefs_operations(source)
    try:
        [second] = fresh.sync(name=mirror_name)
    finally:
        fresh.close()
    assert second.ok, second.to_json()
    served = lakefs_operations(source) - before
    # across the link only the new metarange and its new range: the parent's metarange is read at the mirror
    assert served["GetMetadataObject"] == 2, served
    # neither the source's log (the parent is asked about at the mirror) nor, read through the API, its namespace
    assert served["LogCommits"] == 0 and served["GetRepository"] == 0, served
    [main] = [r for r in second.refs if r.name == "main"]
    assert main.stats.ranges_transferred == 1, main.stats.to_json()
    assert main.stats.objects_copied == 1, main.stats.to_json()
    assert_ref_complete(dst_svc, mirror_name, main.source_commit or "")

    # the parent's metarange gone at the mirror: read from the source instead, and the sync goes on
    parent = src.get_commit(repo, main.source_commit or "")
    store, namespace = dst_svc.destination_store(""), _namespace(dst_svc, mirror_name)
    store.delete(metadata_uri(namespace, parent.metarange_id))
    src.upload_object(repo, "main", "log/last.txt", content("the last"))
    src.commit(repo, "main", "the last")
    with caplog.at_level(logging.INFO, logger=history.__name__):
        [third] = dst_svc.sync(name=mirror_name)
    assert third.ok, third.to_json()
    assert f"metarange {parent.metarange_id} of {mirror_name} read from the source" in caplog.text
    [main] = [r for r in third.refs if r.name == "main"]
    assert (main.stats.ranges_transferred, main.stats.objects_copied) == (1, 1), main.stats.to_json()


def _namespace(service: ReplicationService, mirror_name: str) -> str:
    return next(service.my_mirrors(name=mirror_name)).storage_namespace
