"""Imported objects keep full addresses outside the repository's namespace: listed, and refused when strict."""

from __future__ import annotations

import dataclasses
import time

import lakefs_sdk

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService

from .conftest import content


def _import(client, repo: str, source_prefix: str, destination: str) -> None:
    """lakeFS's own import: objects stay where they are and are committed with FULL addresses."""
    api = lakefs_sdk.ImportApi(client._api)
    body = lakefs_sdk.ImportCreation(
        paths=[lakefs_sdk.ImportLocation(type="common_prefix", path=source_prefix, destination=destination)],
        commit=lakefs_sdk.CommitCreation(message="import external data"),
    )
    task = client.call("import", api.import_start, repo, "main", body)
    for _ in range(300):
        status = client.call("import status", api.import_status, repo, "main", task.id)
        if status.completed:
            return
        assert not status.error, status.error
        time.sleep(0.1)
    raise AssertionError("import did not complete")


def test_imported_objects_are_listed_and_strict_mode_refuses_them(
    lakefs_env, service_for, config_path, unique_name
) -> None:
    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo = unique_name("imports")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "own/file.txt", b"written through lakeFS")
    src.commit(repo, "main", "own data")
    minio = lakefs_env.minio["minio-a"].s3_client()
    for i in range(3):
        minio.put_object(Bucket="region-a", Key=f"external-{repo}/obj-{i}", Body=content(f"ext{i}"))
    _import(src, repo, f"s3://region-a/external-{repo}/", "imported/")

    lenient, strict = unique_name("lenient"), unique_name("strict")
    for name in (lenient, strict):
        svc_a.create_mirror(
            source_repository=repo,
            name=name,
            region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(name),
        )

    [result] = service_for("region-b").sync(name=lenient)
    main = next(r for r in result.refs if r.name == "main")
    assert result.ok and main.action == "created"
    assert main.stats.full_address_objects == 3
    assert all(a.startswith(f"s3://region-a/external-{repo}/") for a in main.stats.full_address_examples)

    base = load_config(config_path("region-b"), env={})
    strict_config = dataclasses.replace(base, transfer=dataclasses.replace(base.transfer, strict_full_addresses=True))
    strict_service = ReplicationService(strict_config)
    try:
        [blocked] = strict_service.sync(name=strict)
        main = next(r for r in blocked.refs if r.name == "main")
        assert main.action == "blocked" and "strict_full_addresses" in (main.error or "")
        assert not list(strict_service.client("region-b").list_branches(strict)), "nothing may be promoted"
        # Ranges validated leniently are not trusted once strict: an empty commit reusing the leniently
        # synced metarange is validated again and refused.
        src.commit(repo, "main", "nothing new", allow_empty=True)
        [again] = strict_service.sync(name=lenient)
        main = next(r for r in again.refs if r.name == "main")
        assert main.action == "blocked" and "strict_full_addresses" in (main.error or ""), main
    finally:
        strict_service.close()
