"""Two real lakeFS regions sharing a DynamoDB mirrors database (DynamoDB Local), configured as the reference's
two-region example is: one table, each region signing for its own AWS region."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.config import ConfigError, load_config
from lakefs_mirror_dagster.config.database import DynamoDBSettings
from lakefs_mirror_dagster.mirrors import MirrorState
from lakefs_mirror_dagster.region import ReplicationService

from .conftest import assert_mirror_equals_source, content

AWS_REGIONS = {"region-a": "us-east-1", "region-b": "us-west-2"}


def write_config(
    config_path: Callable[[str], Path], tmp_path: Path, region: str, settings: DynamoDBSettings, **changes: Any
) -> Path:
    """The devenv config of ``region`` with the DynamoDB mirrors database (and ``changes``) in place."""
    raw = yaml.safe_load(config_path(region).read_text())
    raw["mirrors_database"] = {
        "type": "dynamodb",
        "dynamodb": {
            "table_name": settings.table_name,
            "aws_region": AWS_REGIONS[region],
            "endpoint": settings.endpoint,
            "aws_access_key_id": settings.aws_access_key_id,
            "aws_secret_access_key": settings.aws_secret_access_key.reveal(),
        },
    }
    raw.update(changes)
    path = tmp_path / f"replication-{region}-{len(changes)}.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    return path


def test_a_mirror_is_created_and_synced_through_a_dynamodb_mirrors_database(
    lakefs_env: Environment,
    config_path: Callable[[str], Path],
    dynamodb_settings: DynamoDBSettings,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    east = ReplicationService(load_config(write_config(config_path, tmp_path, "region-a", dynamodb_settings), env={}))
    west = ReplicationService(load_config(write_config(config_path, tmp_path, "region-b", dynamodb_settings), env={}))
    try:
        src = east.client("region-a")
        repo, mirror_name = unique_name("repo"), unique_name("mirror")
        src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
        for i in range(3):
            key = f"data/part-{i}.csv"
            src.upload_object(repo, "main", key, content(key))
            src.commit(repo, "main", f"part {i}")

        # Created in the source region, found by the destination region in the shared table.
        created = east.create_mirror(
            source_repository=repo,
            name=mirror_name,
            region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(mirror_name),
        )
        assert west.mirror_named(mirror_name).id == created.id
        [result] = west.sync(name=mirror_name)
        assert result.ok, result.to_json()
        assert_mirror_equals_source(src, repo, west.client("region-b"), mirror_name)

        # The destination's pass recorded the mirror active and the branch in sync, as the source region reads it.
        mirror = east.get_mirror(created.id)
        assert mirror.state is MirrorState.ACTIVE and mirror.generation > created.generation
        [main] = east.mirrors.get_branches(created.id)
        assert main.branch == "main" and main.in_sync
        assert main.mirrored_commit_id == src.get_branch_head(repo, "main")

        # A new commit at the source is mirrored by the next pass.
        src.upload_object(repo, "main", "data/late.csv", b"late")
        head = src.commit(repo, "main", "late").id
        [again] = west.sync(name=mirror_name)
        assert again.ok, again.to_json()
        assert west.client("region-b").get_branch_head(mirror_name, "main") == head
        recorded = east.mirrors.get_branch(created.id, "main")
        assert recorded is not None and recorded.mirrored_commit_id == head
    finally:
        east.close()
        west.close()

    # A region of the same organisation with another secret key is refused by the fingerprint in the table.
    other_key = write_config(
        config_path, tmp_path, "region-b", dynamodb_settings, auth={"encrypt": {"secret_key": "another-key"}}
    )
    with pytest.raises(ConfigError) as refused:
        ReplicationService(load_config(other_key, env={})).close()
    assert refused.value.path == "auth.encrypt.secret_key"
    assert dynamodb_settings.table_name in str(refused.value)


@pytest.mark.parametrize(("page_size", "limits"), [(2, [3, 3, 3]), (1000, [1001])])
def test_a_region_reads_its_mirrors_in_pages_of_list_mirrors_page_size(
    lakefs_env: Environment,
    config_path: Callable[[str], Path],
    dynamodb_settings: DynamoDBSettings,
    unique_name: Callable[[str], str],
    tmp_path: Path,
    page_size: int,
    limits: list[int],
) -> None:
    """Five mirrors in region-b: the Query requests sent to DynamoDB Local, seen by botocore's own event system as
    they leave the client, ask for a page and one more (to know whether another page follows) each time."""
    east = ReplicationService(load_config(write_config(config_path, tmp_path, "region-a", dynamodb_settings), env={}))
    west_config = write_config(config_path, tmp_path, "region-b", dynamodb_settings, list_mirrors_page_size=page_size)
    west = ReplicationService(load_config(west_config, env={}))
    try:
        src = east.client("region-a")
        repo = unique_name("repo")
        src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
        names = sorted(unique_name("mirror") for _ in range(5))
        for name in names:
            b = lakefs_env.region("region-b")
            east.create_mirror(
                source_repository=repo, name=name, region="region-b", storage_namespace=b.namespace_for(name)
            )
        sent: list[int] = []

        def count(request: Any, **_: Any) -> None:
            if request.headers.get("X-Amz-Target", b"").endswith(b".Query"):
                sent.append(json.loads(request.body)["Limit"])

        west.mirrors._client.meta.events.register("before-send.dynamodb", count)  # the store's botocore client
        assert sorted(m.name for m in west.my_mirrors()) == names
        assert sent == limits
    finally:
        east.close()
        west.close()
