"""The reference's way to authenticate: one replication user, with the same access key id and secret in every
region's lakeFS, so each region's config carries that one ``lakefs`` key and no ``region_credentials`` (the dev
environment gives every region keys of its own). Two lakeFS started here for it; a mirror converges."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from lakefs_mirror_devenv import Environment, LakeFSRegion
from lakefs_mirror_devenv.processes import stop_pid
from lakefs_mirror_devenv.replication_config import replication_config_dict
from lakefs_mirror_devenv.servers import start_lakefs

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService

from .conftest import assert_mirror_equals_source, assert_ref_complete, content

KEYS = ("AKIA" + secrets.token_hex(8).upper(), secrets.token_urlsafe(30))


@pytest.fixture
def shared_user_regions(tmp_path: Path) -> Iterator[Environment]:
    """Two lakeFS installations of one organisation whose admin has the same keys in both."""
    env = Environment(state_dir=str(tmp_path))
    auth_secret = secrets.token_hex(16)
    try:
        for name in ("shared-x", "shared-y"):
            env.regions[name] = start_lakefs(name, tmp_path / name, auth_secret=auth_secret, admin_keys=KEYS)
        yield env
    finally:
        for region in env.regions.values():
            stop_pid(region.pid)


def _config(env: Environment, region: str, tmp_path: Path) -> Path:
    """The devenv's config of ``region`` without ``region_credentials``: the one ``lakefs`` key for every region."""
    raw = replication_config_dict(env, region)
    del raw["region_credentials"]
    raw["mirrors_database"] = {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}}
    path = tmp_path / f"replication-{region}.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    return path


def test_one_replication_user_with_the_same_keys_in_every_region_mirrors(
    shared_user_regions: Environment, tmp_path: Path, unique_name
) -> None:
    x: LakeFSRegion = shared_user_regions.region("shared-x")
    y: LakeFSRegion = shared_user_regions.region("shared-y")
    assert (x.access_key_id, x.secret_access_key) == (y.access_key_id, y.secret_access_key) == KEYS
    config_x = load_config(_config(shared_user_regions, "shared-x", tmp_path), env={})
    config_y = load_config(_config(shared_user_regions, "shared-y", tmp_path), env={})
    assert not config_x.region_credentials and not config_y.region_credentials
    assert config_y.credentials_for("shared-x") == config_y.credentials_for("shared-y") == KEYS

    src = LakeFSClient(x.endpoint, *KEYS)
    repo, mirror = unique_name("shared"), unique_name("mirror")
    src.create_repository(repo, x.namespace_for(repo))
    for i in range(3):
        src.upload_object(repo, "main", f"data/{i}", content(f"data/{i}", 200))
        src.commit(repo, "main", f"commit {i}")
    src.create_branch(repo, "feature", "main")
    src.create_tag(repo, "v1", "main")

    svc_x, svc_y = ReplicationService(config_x), ReplicationService(config_y)
    try:
        svc_x.create_mirror(
            source_repository=repo, name=mirror, region="shared-y", storage_namespace=y.namespace_for(mirror)
        )
        [result] = svc_y.sync(name=mirror)
        assert result.ok, result.to_json()
        dst = LakeFSClient(y.endpoint, *KEYS)
        assert_mirror_equals_source(src, repo, dst, mirror)
        assert_ref_complete(svc_y, mirror, src.get_branch_head(repo, "main"))
        assert dst.get_object(mirror, "main", "data/2") == content("data/2", 200)
        dst.close()
    finally:
        svc_x.close()
        svc_y.close()
        src.close()
