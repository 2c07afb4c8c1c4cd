"""The shipped least-privilege policies (deploy/policies/least-privilege.yaml): readers, operators, admins.

First the file as shipped, rule by rule; then live, against region-a's real lakeFS, with three access keys lakeFS
authenticates. Open-source lakeFS has one user with one access key, so each role is given to that key in turn
(the file maps user ids or access key ids to policies) and a server is started per role.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
import yaml
from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.service import load_policies
from lakefs_mirror_dagster.service.rbac import (
    Permission,
    PolicySet,
    create_mirror_permissions,
    delete_mirror_permissions,
    edit_mirrored_branches_permissions,
    list_mirrors_permissions,
)

from .conftest import Answer, Api, curl

SHIPPED = Path(__file__).resolve().parents[2] / "deploy" / "policies" / "least-privilege.yaml"


def test_the_shipped_file_gives_each_role_exactly_its_calls() -> None:
    policies = PolicySet(*load_policies(SHIPPED))
    reader = {"user_id": "anyone", "access_key_id": "AKIAANYONE"}
    operator = {"user_id": "data-platform-oncall", "access_key_id": "AKIAONCALL"}
    admin = {"user_id": "anyone", "access_key_id": "AKIAIOSFODNN7EXAMPLE"}
    listing = list_mirrors_permissions()
    create = create_mirror_permissions("sales", "sales-west", "s3://west-bucket/sales-west")
    edit = edit_mirrored_branches_permissions("sales")
    delete = delete_mirror_permissions("sales-west")
    mirror_repo = "arn:lakefs:fs:::repository/sales-west"

    assert policies.missing(listing, **reader) is None
    assert policies.missing(create, **reader) == Permission("fs:MirrorRepository", "arn:lakefs:fs:::repository/sales")
    assert policies.missing(edit, **reader) is not None
    assert policies.missing(delete, **reader) == Permission("fs:DeleteRepository", mirror_repo)

    assert policies.missing(listing, **operator) is None
    assert policies.missing(create, **operator) is None
    assert policies.missing(edit, **operator) is None
    assert policies.missing(delete, **operator) == Permission("fs:DeleteRepository", mirror_repo)

    for needed in (listing, create, edit, delete):
        assert policies.missing(needed, **admin) is None


@pytest.mark.integration
def test_reader_operator_admin_against_real_lakefs(
    serve_api: Callable[..., AbstractContextManager[Api]],
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    region = lakefs_env.region("region-a")
    repo, name = unique_name("src"), unique_name("mirror")
    client_for("region-a").create_repository(repo, region.namespace_for(repo))
    body = json.dumps(
        {"name": name, "region": "region-b", "storage_namespace": lakefs_env.region("region-b").namespace_for(name)}
    )

    @contextmanager
    def serve_as(role: str | None) -> Iterator[tuple[Api, str]]:
        """The shipped policies, the caller's real lakeFS access key given ``role`` (None: only ``"*"``'s)."""
        shipped = yaml.safe_load(SHIPPED.read_text())
        shipped["users"] = {"*": ["MirrorReaders"], **({region.access_key_id: [role]} if role else {})}
        (tmp_path / "policies.yaml").write_text(yaml.safe_dump(shipped))
        policies, users = load_policies(tmp_path / "policies.yaml")
        with serve_api(policies=policies, user_policies=users) as api:
            yield api, f"{api.url}/service/replication/v1/repositories/{repo}/mirrors"

    def create(api: Api, url: str) -> Answer:
        return curl(url, "-u", api.user, "-X", "POST", "-H", "Content-Type: application/json", "--data", body)

    def delete_is_refused(api: Api, url: str) -> None:
        denied = curl(url, "-u", api.user, "-X", "DELETE")
        assert denied.status == 403, denied.body
        assert f"not allowed fs:DeleteRepository on arn:lakefs:fs:::repository/{name}" in denied.body["message"]

    with serve_as(None) as (api, mirrors):  # a reader
        refused = create(api, mirrors)
        assert refused.status == 403 and "fs:MirrorRepository" in refused.body["message"], refused
        assert curl(mirrors, "-u", api.user).body["results"] == []  # nothing was created

    with serve_as("MirrorOperators") as (api, mirrors):
        created = create(api, mirrors)
        assert created.status == 201, created.body
        mirror_id = created.body["id"]
        assert curl(f"{mirrors}/{mirror_id}", "-u", api.user).body["name"] == name
        delete_is_refused(api, f"{mirrors}/{mirror_id}")

    with serve_as(None) as (api, mirrors):  # the reader sees it, and may not delete it either
        assert [m["name"] for m in curl(mirrors, "-u", api.user).body["results"]] == [name]
        assert curl(f"{mirrors}/{mirror_id}", "-u", api.user).body["name"] == name
        delete_is_refused(api, f"{mirrors}/{mirror_id}")
        assert api.service.get_mirror(mirror_id).state == "pending"  # untouched

    with serve_as("MirrorAdmins") as (api, mirrors):
        deleted = curl(f"{mirrors}/{mirror_id}", "-u", api.user, "-X", "DELETE")
        assert deleted.status == 202, deleted.body
        assert (deleted.body["repository"], deleted.body["region"]) == (name, "region-b")
        assert api.service.get_mirror(mirror_id).state == "deleting"


def test_the_start_up_mode_names_the_policies_or_warns_that_all_is_open() -> None:
    from lakefs_mirror_dagster.service import authorization_mode

    open_mode = authorization_mode(PolicySet(), policies_source=None, region="east", lakefs_model="none")
    assert open_mode.name == "open" and open_mode.warning
    assert "ANY authenticated lakeFS user of region east" in open_mode.message
    strict = authorization_mode(
        PolicySet(*load_policies(SHIPPED)), policies_source=str(SHIPPED), region="east", lakefs_model="external"
    )
    assert strict.name == "policies" and not strict.warning
    assert f"policies from {SHIPPED}" in strict.message and "RBAC through an external auth service" in strict.message
    unknown = authorization_mode(PolicySet(), policies_source=None, region="east", lakefs_model=None)
    assert "did not say how it authorizes" in unknown.message


def test_a_lakefs_that_does_not_answer_is_reported_as_not_saying() -> None:
    from lakefs_mirror_devenv.processes import free_port

    from lakefs_mirror_dagster.service import lakefs_rbac_model

    client = LakeFSClient(f"http://127.0.0.1:{free_port()}", "key", "secret", attempts=1, timeout_s=5)
    try:
        assert lakefs_rbac_model(client) is None
    finally:
        client.close()
