"""The reference's curl commands against a live API server, backed by real lakeFS regions.

Region-a is the source installation (the API runs there); mirrors go to region-b.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.region import ReplicationService

from .conftest import Api, curl

pytestmark = pytest.mark.integration


def _mirrors_url(api: Api, repo: str) -> str:
    return f"{api.url}/service/replication/v1/repositories/{repo}/mirrors"


def _create(api: Api, repo: str, body: dict | str) -> object:
    """The reference's create command, as written."""
    return curl(
        _mirrors_url(api, repo),
        "--header", "Content-Type: application/json",
        "-u", api.user,
        "-X", "POST",
        "--data", body if isinstance(body, str) else json.dumps(body),
    )  # fmt: skip


def _source_repo(lakefs_env, client_for, unique_name) -> str:
    repo = unique_name("src")
    client_for("region-a").create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    return repo


def _names(service: ReplicationService) -> set[str]:
    return {m.name for m in service.mirrors.iter_mirrors()}


def test_reference_commands_create_list_get_delete(api, lakefs_env, client_for, service_for, unique_name) -> None:
    repo = _source_repo(lakefs_env, client_for, unique_name)
    name = unique_name("mirror")
    namespace = lakefs_env.region("region-b").namespace_for(name)

    created = _create(api, repo, {"name": name, "region": "region-b", "storage_namespace": namespace})
    assert created.status == 201, created.body
    mirror = created.body
    assert (mirror["name"], mirror["region"], mirror["source_repository"]) == (name, "region-b", repo)
    assert (mirror["storage_namespace"], mirror["state"], mirror["branches"]) == (namespace, "pending", [])
    assert api.service.mirrors.get_mirror(mirror["id"]).name == name  # really recorded

    # The destination region's service mirrors it; the API then shows the mirrored commit per branch.
    service_for("region-b").sync(name=name)
    head = client_for("region-a").get_branch_head(repo, "main")

    listed = curl(_mirrors_url(api, repo), "-u", api.user, "-s")
    assert listed.status == 200
    assert [m["id"] for m in listed.body["results"]] == [mirror["id"]]
    assert listed.body["pagination"]["has_more"] is False
    assert listed.body["pagination"]["results"] == 1

    got = curl(f"{_mirrors_url(api, repo)}/{mirror['id']}", "-u", api.user, "-s")
    assert got.status == 200
    assert got.body["state"] == "active"
    [branch] = got.body["branches"]
    assert (branch["branch"], branch["mirrored_commit_id"], branch["source_commit_id"]) == ("main", head, head)
    assert branch["promoted_at"] is not None and branch["lag_seconds"] is not None
    # region-a has no refstore_database: the API says same-second commits may be listed in another order
    assert got.body["log_order"].startswith("log order of same-second commits may differ from the source")

    # The same mirror id under another repository does not exist.
    other = _source_repo(lakefs_env, client_for, unique_name)
    assert curl(f"{_mirrors_url(api, other)}/{mirror['id']}", "-u", api.user, "-s").status == 404
    assert curl(f"{_mirrors_url(api, other)}/{mirror['id']}", "-X", "DELETE", "-u", api.user).status == 404
    assert api.service.mirrors.get_mirror(mirror["id"]).state == "active"

    deleted = curl("-X", "DELETE", f"{_mirrors_url(api, repo)}/{mirror['id']}", "-u", api.user)
    # accepted, naming the repository that the mirror's region deletes
    assert deleted.status == 202, deleted.body
    assert (deleted.body["repository"], deleted.body["region"], deleted.body["state"]) == (name, "region-b", "deleting")
    assert f"repository {name} in region region-b is deleted" in deleted.body["message"]
    after = curl(f"{_mirrors_url(api, repo)}/{mirror['id']}", "-u", api.user, "-s")
    assert after.body["state"] == "deleting"
    again = curl("-X", "DELETE", f"{_mirrors_url(api, repo)}/{mirror['id']}", "-u", api.user)
    assert again.status == 202 and again.body["repository"] == name


def test_listing_pages_by_configured_size(serve_api, lakefs_env, client_for, config_path, unique_name) -> None:
    from lakefs_mirror_dagster.config import load_config

    config = dataclasses.replace(load_config(config_path("region-a"), env={}), list_mirrors_page_size=2)
    service = ReplicationService(config)
    try:
        repo = _source_repo(lakefs_env, client_for, unique_name)
        ids = []
        for _ in range(3):
            name = unique_name("page")
            ns = lakefs_env.region("region-b").namespace_for(name)
            ids.append(
                service.create_mirror(source_repository=repo, name=name, region="region-b", storage_namespace=ns).id
            )
        with serve_api(service=service) as api:
            first = curl(_mirrors_url(api, repo), "-u", api.user, "-s").body
            assert first["pagination"]["has_more"] is True and first["pagination"]["max_per_page"] == 2
            after = first["pagination"]["next_offset"]
            second = curl(f"{_mirrors_url(api, repo)}?after={after}", "-u", api.user, "-s").body
            assert second["pagination"]["has_more"] is False and second["pagination"]["next_offset"] == ""
            assert [m["id"] for m in first["results"] + second["results"]] == sorted(ids)
    finally:
        service.close()


def test_every_bad_request_is_refused_and_writes_nothing(api, lakefs_env, client_for, unique_name) -> None:
    repo = _source_repo(lakefs_env, client_for, unique_name)
    b = lakefs_env.region("region-b")
    free, taken_repo, existing = unique_name("free"), unique_name("taken"), unique_name("exists")
    client_for("region-b").create_repository(taken_repo, b.namespace_for(taken_repo))
    first = _create(api, repo, {"name": existing, "region": "region-b", "storage_namespace": b.namespace_for(existing)})
    assert first.status == 201
    before = _names(api.service)

    def create(body: dict | str, repository: str = repo) -> tuple[int, str]:
        answer = _create(api, repository, body)
        assert set(answer.body) == {"message"}, answer.body
        return answer.status, answer.body["message"]

    ok = {"name": free, "region": "region-b", "storage_namespace": b.namespace_for(free)}
    status, message = create({**ok, "name": "Bad_Name"})
    assert status == 400 and "name" in message
    status, message = create({**ok, "region": "region-x"})
    assert status == 400 and "region-x" in message and "region-b" in message
    status, message = create({**ok, "region": "region-a"})
    assert status == 400 and "source region" in message
    status, message = create('{"name": "x", "region": ')
    assert status == 400 and "malformed JSON" in message
    status, message = create({"name": free, "region": "region-b"})
    assert status == 400 and "storage_namespace" in message
    status, message = create({**ok, "region": 7})
    assert status == 400 and "region" in message
    status, message = create({**ok, "storage_namespace": "bucket/no-scheme"})
    assert status == 400 and "storage_namespace" in message
    status, message = create(ok, repository="no-such-repo")
    assert status == 404 and "no-such-repo" in message
    status, message = create({**ok, "name": taken_repo})
    assert status == 409 and "already exists" in message
    status, message = create({**ok, "name": existing})
    assert status == 409 and existing in message
    status, message = create({**ok, "storage_namespace": b.namespace_for(taken_repo)})
    assert status == 409 and taken_repo in message
    status, message = create({**ok, "storage_namespace": b.namespace_for(existing) + "/inner"})
    assert status == 400 and "lies inside" in message and existing in message
    # region-b's lakeFS (open source) has one blockstore: any storage id would break that region's syncs later
    status, message = create({**ok, "storage_id": "nowhere"})
    assert status == 400 and "'nowhere'" in message and "region-b" in message and "leave storage_id empty" in message
    assert _names(api.service) == before

    assert curl(f"{_mirrors_url(api, repo)}/no-such-mirror", "-u", api.user, "-s").status == 404
    assert curl(f"{_mirrors_url(api, 'Bad_Repo')}", "-u", api.user, "-s").status == 400


def test_bad_or_missing_credentials_get_401(api, lakefs_env, client_for, unique_name) -> None:
    repo = _source_repo(lakefs_env, client_for, unique_name)
    key = api.user.split(":")[0]
    for auth in (["-u", f"{key}:wrong-secret"], ["-u", "AKIANOSUCHKEY:whatever"], []):
        answer = curl(_mirrors_url(api, repo), *auth, "-s")
        assert answer.status == 401, auth
        assert answer.headers["www-authenticate"].startswith("Basic")
        assert "message" in answer.body
    name = unique_name("m")
    body = {"name": name, "region": "region-b", "storage_namespace": lakefs_env.region("region-b").namespace_for(name)}
    denied = curl(
        _mirrors_url(api, repo), "-u", f"{key}:wrong", "-X", "POST", "--header", "Content-Type: application/json",
        "--data", json.dumps(body),
    )  # fmt: skip
    assert denied.status == 401
    assert name not in _names(api.service)
    assert curl(f"{api.url}/_health", "-s").status == 200


def test_policies_allow_and_deny_live(serve_api, lakefs_env, client_for, unique_name) -> None:
    repo = _source_repo(lakefs_env, client_for, unique_name)
    key = lakefs_env.region("region-a").access_key_id
    policies = [
        {"id": "Mirrors", "statement": [{"action": ["fs:*"], "effect": "allow", "resource": "*"}]},
        {
            "id": "NoProdMirrors",
            "statement": [
                {"action": ["fs:CreateRepository"], "effect": "deny", "resource": "arn:lakefs:fs:::repository/prod-*"}
            ],
        },
    ]
    b = lakefs_env.region("region-b")
    with serve_api(policies=policies, user_policies={key: ["Mirrors", "NoProdMirrors"]}) as api:
        prod = f"prod-{unique_name('m')}"
        answer = _create(api, repo, {"name": prod, "region": "region-b", "storage_namespace": b.namespace_for(prod)})
        assert answer.status == 403
        assert "fs:CreateRepository" in answer.body["message"] and prod in answer.body["message"]
        assert prod not in _names(api.service)
        dev = unique_name("dev")
        answer = _create(api, repo, {"name": dev, "region": "region-b", "storage_namespace": b.namespace_for(dev)})
        assert answer.status == 201
        dev_id = answer.body["id"]
        # allowed to delete: an id that does not exist is a plain 404
        gone = curl(f"{_mirrors_url(api, repo)}/no-such-mirror", "-u", api.user, "-X", "DELETE")
        assert gone.status == 404
    # the same key, mapped to no policy: nothing allowed, listing included
    with serve_api(policies=policies, user_policies={"someone-else": ["Mirrors"]}) as api:
        answer = curl(_mirrors_url(api, repo), "-u", api.user, "-s")
        assert answer.status == 403 and "fs:ListRepositories" in answer.body["message"]
        # permission before existence: the same 403 for an existing mirror and for an id that does not exist
        for mirror_id in (dev_id, "no-such-mirror"):
            denied = curl(f"{_mirrors_url(api, repo)}/{mirror_id}", "-u", api.user, "-X", "DELETE")
            assert denied.status == 403 and "fs:DeleteRepository" in denied.body["message"], (mirror_id, denied)
        assert api.service.mirrors.get_mirror(dev_id).state.value != "deleting"


def test_readiness_names_what_does_not_answer(api, serve_api, config_path) -> None:
    """``/_ready`` answers 200 while the mirrors database and the region's lakeFS answer, 503 naming the one that
    does not (a load balancer or Kubernetes then sends no traffic to it); ``/_health`` stays 200 either way."""
    assert curl(f"{api.url}/_ready").status == 200
    assert curl(f"{api.url}/_ready").body == {"status": "ready"}
    config = load_config(config_path("region-a"), env={})
    lost = dataclasses.replace(config, regional_endpoint=f"http://127.0.0.1:{free_port()}")  # nothing listens
    service = ReplicationService(lost)
    try:
        with serve_api(service=service) as cut_off:
            answer = curl(f"{cut_off.url}/_ready")
            assert answer.status == 503, answer.body
            [problem] = answer.body["problems"]
            assert problem.startswith("lakeFS of region region-a at http://127.0.0.1:") and "does not answer" in problem
            assert curl(f"{cut_off.url}/_health").status == 200
    finally:
        service.close()
