"""Fixtures for refs migration and promotion: configs per region, one with both stores, a CLI runner."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.replication_config import replication_config_dict

from lakefs_mirror_dagster.cli.refs import add_promote_command, add_refs_commands
from lakefs_mirror_dagster.lakefs import LakeFSClient
from tests.replication.conftest import config_path, content, service_for

__all__ = ["config_path", "content", "populate", "service_for", "snapshot"]


@pytest.fixture(scope="session")
def migration_config(lakefs_env: Environment, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """region-b's config with both stores listed: its own local disk and region-a's MinIO (the old store)."""
    data = replication_config_dict(lakefs_env, "region-b")
    del data["blockstore"]
    data["blockstores"] = {
        "stores": [
            {"id": "local", "backward_compatible": True, **lakefs_env.region("region-b").blockstore},
            {"id": "minio-a", **lakefs_env.region("region-a").blockstore},
        ]
    }
    path = tmp_path_factory.mktemp("refs-config") / "migration-region-b.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def run_cli() -> Callable[..., int]:
    """``lakefs-mirror --config C refs|mirrors ...`` through the parser functions the CLI calls (cli/refs.py)."""

    def run(config: Path, *argv: str) -> int:
        parser = argparse.ArgumentParser(prog="lakefs-mirror")
        parser.add_argument("--config", type=Path)
        sub = parser.add_subparsers(dest="command", required=True)
        add_refs_commands(sub)
        mirrors = sub.add_parser("mirrors")
        add_promote_command(mirrors.add_subparsers(dest="mirrors_command", required=True))
        args = parser.parse_args(["--config", str(config), *argv])
        return int(args.func(args))

    return run


def populate(client: LakeFSClient, repo: str) -> dict[str, bytes]:
    """Several commits on main, a feature branch merged back, a deleted object, two tags, a second branch."""
    expected: dict[str, bytes] = {}
    for i in range(4):
        key = f"events/part-{i}.bin"
        expected[key] = content(key, 100 + i)
        client.upload_object(repo, "main", key, expected[key])
        client.commit(repo, "main", f"part {i}", metadata={"batch": str(i)})
    client.create_tag(repo, "v1", "main")
    client.create_branch(repo, "feature", "main")
    for i in range(2):
        key = f"users/u-{i}.json"
        expected[key] = content(key, 40)
        client.upload_object(repo, "feature", key, expected[key])
        client.commit(repo, "feature", f"users {i}")
    client.delete_object(repo, "main", "events/part-0.bin")
    client.commit(repo, "main", "drop part 0")
    del expected["events/part-0.bin"]
    client.merge(repo, "feature", "main")
    client.create_tag(repo, "v2", "main")
    client.create_branch(repo, "old", "v1")
    return expected


def snapshot(client: LakeFSClient, repo: str) -> dict[str, Any]:
    """Everything a user would compare: refs, and every commit reachable from every branch (all fields)."""
    branches = {r.id: r.commit_id for r in client.list_branches(repo)}
    return {
        "default_branch": client.get_repository(repo).default_branch,
        "branches": branches,
        "tags": {r.id: r.commit_id for r in client.list_tags(repo)},
        "logs": {b: sorted(c.to_json()["id"] for c in client.log_commits(repo, b)) for b in branches},
        "commits": {c.id: c.to_json() for b in branches for c in client.log_commits(repo, b)},
    }


def read_all(client: LakeFSClient, repo: str, ref: str) -> dict[str, bytes]:
    return {o.path: client.get_object(repo, ref, o.path) for o in client.list_objects(repo, ref)}
