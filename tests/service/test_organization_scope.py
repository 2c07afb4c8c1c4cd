"""Through the API, a region of another organisation sharing the mirrors database sees none of the first
organisation's mirrors: not listed, and 404 by id (to read and to delete)."""

from __future__ import annotations

import pytest
import yaml

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService
from tests.replication.conftest import isolated_regions  # noqa: F401 (fixture)

from .conftest import curl

pytestmark = pytest.mark.integration


def test_another_organisations_mirror_is_not_found(
    serve_api,
    isolated_regions,  # noqa: F811
    lakefs_env,
    client_for,
    unique_name,
    tmp_path,
) -> None:
    path, service = isolated_regions
    ours = service("region-a")
    repo = unique_name("src")
    client_for("region-a").create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    name = unique_name("mirror")
    mirror = ours.mirrors.create_mirror(
        organization_id=ours.config.organization_id,
        source_region="region-a",
        source_repository=repo,
        name=name,
        destination_region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    raw = yaml.safe_load(path("region-a").read_text())
    raw["organization_id"] = "another-org"
    other_path = tmp_path / "replication-another-org.yaml"
    other_path.write_text(yaml.safe_dump(raw))
    other_path.chmod(0o600)
    other = ReplicationService(load_config(other_path, env={}))
    try:
        for svc, listed, status in ((ours, [mirror.id], 200), (other, [], 404)):
            with serve_api(service=svc) as api:
                url = f"{api.url}/service/replication/v1/repositories/{repo}/mirrors"
                answer = curl(url, "-u", api.user)
                assert answer.status == 200, answer.body
                assert [m["id"] for m in answer.body["results"]] == listed
                assert curl(f"{url}/{mirror.id}", "-u", api.user).status == status
        with serve_api(service=other) as api:
            url = f"{api.url}/service/replication/v1/repositories/{repo}/mirrors/{mirror.id}"
            assert curl(url, "-X", "DELETE", "-u", api.user).status == 404
        assert ours.get_mirror(mirror.id).state == "pending"  # untouched by the other organisation
    finally:
        other.close()
