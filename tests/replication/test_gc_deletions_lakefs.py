"""``lakefs-mirror gc`` against real lakeFS and MinIO: objects lakeFS GC swept from the source's MinIO namespace
are deleted from the mirror's MinIO namespace, exactly those, and only after the grace period."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.cli import main
from lakefs_mirror_dagster.mirrors import MirrorState
from lakefs_mirror_dagster.storage import parse_uri
from tests.cli_process import run_cli

from .conftest import content
from .gc_case import KEEP, GcCase, make_gc_case

pytestmark = pytest.mark.integration


@pytest.fixture
def case(lakefs_env: Environment, config_path, tmp_path: Path, unique_name) -> Iterator[GcCase]:  # type: ignore[no-untyped-def]
    c = make_gc_case(lakefs_env, config_path, tmp_path, unique_name, dst_region="region-c")
    yield c
    c.source.close()
    c.destination.close()


def _gc(case: GcCase, cwd: Path, *extra: str, code: int = 0, capsys: Any = None) -> dict[str, dict[str, Any]]:
    """Mirror name -> its JSON document, from one ``gc`` run (exit status ``code``): as a user runs it (a process of
    its own), or in this process when ``capsys`` is given (no interpreter start: seconds less)."""
    args = ("--config", str(case.config_path), "gc", "--json", "--yes", *extra)  # gc deletes: --yes
    if capsys is None:
        done = run_cli(*args, cwd=cwd)
        returncode, out, err = done.returncode, done.stdout, done.stderr
    else:
        returncode = main(list(args))
        out, err = capsys.readouterr()
    assert returncode == code, err
    return {doc["mirror"]: doc for doc in map(json.loads, out.splitlines())}


def _in_minio(lakefs_env: Environment, case: GcCase) -> set[str]:
    """The mirror namespace's keys as region-c's MinIO itself lists them (relative to the namespace)."""
    ns = parse_uri(case.mirror.storage_namespace)
    prefix = ns.key.rstrip("/") + "/"
    s3 = lakefs_env.minio[str(lakefs_env.region("region-c").minio)].s3_client()
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=ns.bucket, Prefix=prefix)
    return {o["Key"][len(prefix) :] for page in pages for o in page.get("Contents", [])}


def test_gc_deletes_exactly_what_gc_swept_at_the_source_after_the_grace_period(
    lakefs_env: Environment, case: GcCase, tmp_path: Path, unique_name, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _in_minio(lakefs_env, case)
    assert case.collected < before and any(k.startswith("_lakefs/") for k in before)

    # Another mirror of the region is broken (its repository is gone): reported, and the pass goes on.
    broken = case.source.create_mirror(
        source_repository=case.repo,
        name=unique_name("broken"),
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(unique_name("brokenns")),
    )
    case.destination.mirrors.set_state(broken.id, MirrorState.ACTIVE, "", None)

    passed = _gc(case, tmp_path, code=1)
    assert "LakeFSNotFound" in str(passed[broken.name]["error"])
    first = passed[case.mirror.name]
    assert first["ok"] and (first["missing"], first["newly_missing"], first["deleted"]) == (2, 2, 0)
    assert _in_minio(lakefs_env, case) == before  # within the grace period (2s): marked only

    time.sleep(2.2)
    mine = ("--mirror", case.mirror.name)
    dry = _gc(case, tmp_path, *mine, "--dry-run", capsys=capsys)[case.mirror.name]
    assert dry["dry_run"] and sorted(dry["addresses"]) == sorted(case.collected)
    assert _in_minio(lakefs_env, case) == before

    second = _gc(case, tmp_path, *mine, capsys=capsys)[case.mirror.name]
    assert second["deleted"] == 2 and sorted(second["addresses"]) == sorted(case.collected)
    assert _in_minio(lakefs_env, case) == before - case.collected

    # The mirror still serves its head; the old commit's swept objects are gone there as at the source.
    dst = case.destination.client("region-c")
    for path in KEEP:
        assert dst.get_object(case.mirror.name, "main", path) == content(path, 200 if path == KEEP[0] else 300)

    # A repository someone created inside the mirror's namespace is not garbage: the pass refuses and deletes nothing.
    nested = unique_name("nested")
    dst.create_repository(nested, f"{case.mirror.storage_namespace.rstrip('/')}/{nested}")
    dst.upload_object(nested, "main", "data/x.csv", b"not the mirror's")
    with_nested = _in_minio(lakefs_env, case)
    refused = _gc(case, tmp_path, *mine, code=1, capsys=capsys)[case.mirror.name]
    assert "NamespaceOverlap" in str(refused["error"]) and nested in str(refused["error"])
    assert _in_minio(lakefs_env, case) == with_nested
