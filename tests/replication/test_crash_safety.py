"""A sync killed at any point leaves every mirror ref on completely replicated data, and the next sync converges.

The sync runs as a real `lakefs-mirror sync` process. It is killed at every named write step (failpoints: the
process exits like SIGKILL, without cleanup) and at random moments with SIGKILL; after each kill the invariant is
checked against the destination's storage.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from .conftest import assert_mirror_equals_source, assert_ref_complete, content

FAILPOINTS = [
    "after_object_copy:7",
    "before_range_file:1",
    "after_range_file:1",
    "after_metarange_file:1",
    "before_mark_validated:1",
    "after_commit_record:1",
    "before_ref_move:1",
]


def _sync(config, mirror: str, *, failpoint: str | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop("LAKEFS_MIRROR_FAILPOINT", None)
    if failpoint:
        env["LAKEFS_MIRROR_FAILPOINT"] = failpoint
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lakefs_mirror_dagster.cli",
            "--config",
            str(config),
            "sync",
            "--once",
            "--mirror",
            mirror,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _add_commit(src, repo: str, branch: str, tag: str, n: int = 12) -> None:
    for i in range(n):
        key = f"{tag}/obj-{i:03}"
        src.upload_object(repo, branch, key, content(key, 200 + i))
    src.commit(repo, branch, f"batch {tag}")


def _check_invariant(service, src, repo: str, mirror: str) -> None:
    dst = service.client("region-b")
    for ref in dst.list_branches(mirror):
        assert_ref_complete(service, mirror, ref.commit_id)
        # and the mirror head is a commit the source really has
        assert src.get_commit(repo, ref.commit_id).id == ref.commit_id


def test_sync_killed_at_every_step_never_exposes_partial_commits(
    lakefs_env, service_for, config_path, unique_name
) -> None:
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    src = svc_a.client("region-a")
    repo, mirror = unique_name("crash"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    _add_commit(src, repo, "main", "base")
    src.create_branch(repo, "side", "main")
    svc_a.create_mirror(
        source_repository=repo,
        name=mirror,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(mirror),
    )
    trials = 0
    for n, fp in enumerate(FAILPOINTS):
        _add_commit(src, repo, "main" if n % 2 == 0 else "side", f"fp{n}")
        proc = _sync(config_path("region-b"), mirror, failpoint=fp)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 137, f"failpoint {fp} was not reached: {out.decode()[-2000:]}"
        _check_invariant(svc_b, src, repo, mirror)
        trials += 1

    rng = random.Random(20261122)
    for n in range(6):
        _add_commit(src, repo, "main", f"kill{n}", n=30)
        proc = _sync(config_path("region-b"), mirror)
        time.sleep(rng.uniform(0.8, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        _check_invariant(svc_b, src, repo, mirror)
        trials += 1

    proc = _sync(config_path("region-b"), mirror)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out.decode()[-3000:]
    assert_mirror_equals_source(src, repo, svc_b.client("region-b"), mirror)
    print(f"crash trials: {trials}")


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_range_file_at_destination_is_caught(lakefs_env, service_for, unique_name, damage) -> None:
    """A range file corrupted at the destination is never trusted: validation fails, nothing is promoted."""
    from lakefs_mirror_dagster.replication import metadata_uri, validate_range

    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    src = svc_a.client("region-a")
    repo, mirror = unique_name("damage"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    _add_commit(src, repo, "main", "x", n=3)
    m = svc_a.create_mirror(
        source_repository=repo,
        name=mirror,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(mirror),
    )
    assert svc_b.sync(name=mirror)[0].ok
    head = src.get_commit(repo, src.get_branch_head(repo, "main"))
    store = svc_b.destination_store("")
    from lakefs_mirror_dagster.replication import read_metarange

    range_id = read_metarange(store, m.storage_namespace, head.metarange_id)[0]
    uri = metadata_uri(m.storage_namespace, range_id)
    data = bytearray(store.read_bytes(uri))
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 3] ^= 0xFF
    store.write_bytes(uri, bytes(data))
    result = validate_range(store, m.storage_namespace, range_id)
    assert not result.ok and result.error and range_id in result.error
