"""A blocked branch is retried on the retry schedule (``validator.*``), without any head moving: not before
its cooldown (reported ``deferred``), then by the `sync` loop's retry passes every ``validator.run_interval``.
Missing or invalid data waits ``cooldown_on_missing``, an error (here the source's metarange file unreadable)
waits ``cooldown_on_error``."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.cli import main
from lakefs_mirror_dagster.replication import RefAction

from .conftest import content

pytestmark = pytest.mark.integration

COOLDOWNS = {"run_interval": "1s", "cooldown_on_missing": "2s", "cooldown_on_error": "5s"}


def with_cooldowns(path: Path, *, on_missing: str = COOLDOWNS["cooldown_on_missing"]) -> Path:
    """The region config at ``path`` with short retry settings and a full pass only every minute. Branches
    sync one after another, so b-err is blocked (and its cooldown starts) after a-rot's slow copy retries."""
    raw = yaml.safe_load(path.read_text())
    raw["validator"] = {**raw.get("validator", {}), **COOLDOWNS, "cooldown_on_missing": on_missing}
    sensor = {"process_branches_duration": "1m", "branches_scanner_concurrency_limit": 1}
    raw["commit_sensor"] = {**raw.get("commit_sensor", {}), **sensor}
    path.write_text(yaml.safe_dump(raw))
    return path


def test_blocked_branches_wait_their_cooldown_then_are_retried(
    lakefs_env: Environment, isolated_regions, unique_name, capsys
) -> None:
    config_path, service = isolated_regions
    path_b = with_cooldowns(config_path("region-b"))
    src_svc, dst_svc = service("region-a"), service("region-b")
    src = src_svc.client("region-a")
    s3 = lakefs_env.minio["minio-a"].s3_client()
    repo = unique_name("retry")
    namespace = urlsplit(lakefs_env.region("region-a").namespace_for(repo))
    src.create_repository(repo, namespace.geturl())
    src.upload_object(repo, "main", "data/a.bin", content(f"{repo}/a", 300))
    src.commit(repo, "main", "first")

    # "a-rot": an object whose bytes no longer match lakeFS's checksum (missing/invalid at the destination).
    src.create_branch(repo, "a-rot", "main")
    src.upload_object(repo, "a-rot", "data/rot.bin", content("rot", 2000))
    rot_head = src.commit(repo, "a-rot", "rots at the source").id
    physical = urlsplit(src.stat_object(repo, "a-rot", "data/rot.bin").physical_address)
    rotten = bytearray(content("rot", 2000))
    rotten[5] ^= 0xFF
    s3.put_object(Bucket=physical.netloc, Key=physical.path.lstrip("/"), Body=bytes(rotten))
    # "b-err": a commit whose metarange file the source's store cannot serve (an error, not missing data).
    src.create_branch(repo, "b-err", "main")
    src.upload_object(repo, "b-err", "data/err.bin", content("err", 100))
    err_commit = src.commit(repo, "b-err", "its metarange goes away")
    meta_key = f"{namespace.path.strip('/')}/_lakefs/{err_commit.metarange_id}"
    meta_bytes = s3.get_object(Bucket=namespace.netloc, Key=meta_key)["Body"].read()
    s3.delete_object(Bucket=namespace.netloc, Key=meta_key)

    mirror = src_svc.create_mirror(
        source_repository=repo,
        name=unique_name("m"),
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    [first] = dst_svc.sync(name=mirror.name)
    refs = {r.name: r for r in first.refs}
    assert refs["main"].ok, first.to_json()
    assert (refs["a-rot"].action, refs["a-rot"].blocked_by) == (RefAction.BLOCKED, "missing"), refs["a-rot"].to_json()
    assert (refs["b-err"].action, refs["b-err"].blocked_by) == (RefAction.BLOCKED, "error"), refs["b-err"].to_json()
    blocks = {b.branch: b for b in dst_svc.mirrors.get_branches(mirror.id)}
    for branch, cooldown in (("a-rot", 2), ("b-err", 5)):
        b = blocks[branch]
        assert b.blocked_attempts == 1 and b.retry_after is not None, b
        assert cooldown - 1 < (b.retry_after - b.updated_at).total_seconds() <= cooldown, b

    # Repaired at the source; no head moves. Within the cooldowns nothing is tried again.
    s3.put_object(Bucket=physical.netloc, Key=physical.path.lstrip("/"), Body=content("rot", 2000))
    s3.put_object(Bucket=namespace.netloc, Key=meta_key, Body=meta_bytes)
    [held] = dst_svc.sync(name=mirror.name)
    held_refs = {r.name: r for r in held.refs}
    assert held_refs["a-rot"].action == held_refs["b-err"].action == RefAction.DEFERRED, held.to_json()
    assert "cooldown_on_missing" in (held_refs["a-rot"].error or "")
    assert "cooldown_on_error" in (held_refs["b-err"].error or "")
    dst = dst_svc.client("region-b")
    assert {"a-rot", "b-err"}.isdisjoint({b.id for b in dst.list_branches(mirror.name)})

    # The CLI loop: one full pass, then retry passes every run_interval (the next full pass is a minute
    # away). a-rot is retried once its 2s are over, b-err only after its 5s.
    _sleep_until(blocks["a-rot"].retry_after)
    assert main(["--config", str(path_b), "sync", "--mirror", mirror.name, "--max-passes", "6"]) == 0
    out = capsys.readouterr().out
    passes = out.split(f"mirror {mirror.name} <- ")[1:]
    assert _action(passes[0], "b-err") == "deferred", out  # still in its cooldown at the full pass
    assert _action(passes[0], "a-rot") == "created", out
    assert _action(passes[0], "main") is not None, out  # a full pass lists every branch
    [created] = [p for p in passes[1:] if _action(p, "b-err") == "created"]
    # a retry pass made it: one that lists only the blocked branches, not a full pass (a minute away)
    assert _action(created, "main") is None, out
    heads = {b.id: b.commit_id for b in dst.list_branches(mirror.name)}
    assert heads["a-rot"] == rot_head and heads["b-err"] == err_commit.id
    assert all(b.blocked_commit_id is None for b in dst_svc.mirrors.get_branches(mirror.id))


def _action(block: str, branch: str) -> str | None:
    for line in block.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0] == "branch" and parts[1] == branch:
            return parts[2]
    return None


def _sleep_until(when: dt.datetime | None) -> None:
    assert when is not None
    time.sleep(max(0.0, min(10.0, (when - dt.datetime.now(dt.UTC)).total_seconds() + 0.1)))
