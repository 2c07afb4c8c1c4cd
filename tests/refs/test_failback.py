"""Failover and failback, the whole cycle, against real lakeFS regions: A mirrors to B; A is lost; B's mirror is
promoted and written; A comes back and becomes a mirror of B (only what B wrote is copied); then the direction
is switched back. Data is written with boto3 through the lakeFS S3 gateways; commit IDs stay equal throughout."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lakefs_mirror_dagster.refs import RefsError
from lakefs_mirror_dagster.refs.reverse import reverse_mirror
from tests.replication.conftest import assert_mirror_equals_source

from .conftest import snapshot

pytestmark = pytest.mark.integration


def _put(s3: Any, repo: str, branch: str, key: str, body: bytes) -> None:
    s3.put_object(Bucket=repo, Key=f"{branch}/{key}", Body=body)


def _read(s3: Any, repo: str, ref: str) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=repo, Prefix=f"{ref}/").get("Contents", [])
    return {o["Key"][len(ref) + 1 :]: s3.get_object(Bucket=repo, Key=o["Key"])["Body"].read() for o in listed}


def test_failover_then_failback_loses_nothing_and_copies_only_what_changed(
    lakefs_env, service_for, config_path, run_cli, unique_name, tmp_path, capsys
) -> None:
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    a, b = svc_a.client("region-a"), svc_b.client("region-b")
    s3_a, s3_b = lakefs_env.region("region-a").s3_gateway_client(), lakefs_env.region("region-b").s3_gateway_client()
    repo, name = unique_name("sales"), unique_name("sales-dr")
    a.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    for i in range(5):
        _put(s3_a, repo, "main", f"orders/day-{i}.csv", f"order,{i}\n".encode() * 50)
    a.commit(repo, "main", "five days of orders")
    a.create_tag(repo, "v1", "main")
    namespace_b = lakefs_env.region("region-b").namespace_for(name)
    svc_a.create_mirror(source_repository=repo, name=name, region="region-b", storage_namespace=namespace_b)
    [first] = svc_b.sync(name=name)
    assert first.ok, first.to_json()

    # Region A writes once more, then is lost before B mirrors it.
    _put(s3_a, repo, "main", "orders/day-5.csv", b"written in A just before it was lost")
    lost = a.commit(repo, "main", "never reached B").id

    # Failover: B's mirror becomes writable, and writers move there.
    assert run_cli(config_path("region-b"), "mirrors", "promote", name) == 0
    capsys.readouterr()
    _put(s3_b, name, "main", "orders/day-6.csv", b"written in B after the failover")
    after_failover = b.commit(name, "main", "first write in B").id
    b.create_branch(name, "fixes", "main")
    _put(s3_b, name, "fixes", "notes.txt", b"a branch made in B")
    b.commit(name, "fixes", "a fix")

    # A is back. Its main holds a commit B never got: reversing refuses, naming it, and changes nothing.
    with pytest.raises(RefsError, match=f"main: at {lost}") as refused:
        reverse_mirror(svc_a, repo, source_region="region-b", source_repository=name)
    assert "--allow-diverged" in str(refused.value)
    assert not a.get_repository(repo).read_only and a.get_branch_head(repo, "main") == lost

    assert (
        run_cli(
            config_path("region-a"), "mirrors", "reverse", repo, "--source-region", "region-b",
            "--source-repository", name, "--allow-diverged",
        )
        == 0
    )  # fmt: skip
    reversed_ = json.loads(capsys.readouterr().out)
    assert reversed_["diverged"] == {
        "main": f"at {lost}, which the new source's main ({b.get_branch_head(name, 'main')}) does not contain"
    }
    assert a.get_repository(repo).read_only
    [caught_up] = svc_a.sync(name=repo)
    assert caught_up.ok, caught_up.to_json()
    copied = {r.name: r.stats.objects_copied for r in caught_up.refs}
    assert sum(copied.values()) == 2, copied  # day-6 and notes.txt: nothing A already had is copied again
    assert_mirror_equals_source(b, name, a, repo)
    assert a.get_commit(repo, lost).id == lost  # A's last write is still readable there, by its ID
    assert _read(s3_a, repo, "main")["orders/day-6.csv"] == b"written in B after the failover"

    # Switch back: A takes writes again, and B becomes its mirror once more.
    _put(s3_b, name, "main", "orders/day-7.csv", b"last write in B before switching back")
    last_in_b = b.commit(name, "main", "last write in B").id
    [final] = svc_a.sync(name=repo)
    assert final.ok and a.get_branch_head(repo, "main") == last_in_b
    assert run_cli(config_path("region-a"), "mirrors", "promote", repo) == 0
    capsys.readouterr()
    assert not a.get_repository(repo).read_only
    back = reverse_mirror(svc_b, name, source_region="region-a", source_repository=repo)
    assert back.diverged == {} and b.get_repository(name).read_only
    _put(s3_a, repo, "main", "orders/day-8.csv", b"A is the source again")
    a.commit(repo, "main", "A writes again")
    [again] = svc_b.sync(name=name)
    assert again.ok, again.to_json()
    assert sum(r.stats.objects_copied for r in again.refs) == 1
    assert_mirror_equals_source(a, repo, b, name)
    assert snapshot(a, repo)["commits"].keys() >= {after_failover, last_in_b}
    assert _read(s3_b, name, "main")["orders/day-8.csv"] == b"A is the source again"
