"""The lakeFS behaviour the mirroring engine relies on, checked against the real pinned server.

These settle the facts ``shared/design/lakefs-internals.md`` marks as not yet run against a server.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from base64 import b64encode
from collections.abc import Callable
from dataclasses import replace

import pytest
from lakefs_mirror_devenv import LakeFSRegion

from lakefs_mirror_dagster.graveler.ident import commit_id
from lakefs_mirror_dagster.lakefs import (
    Commit,
    LakeFSBadRequest,
    LakeFSClient,
    LakeFSForbidden,
    LakeFSGone,
    LakeFSNotFound,
)

RANGE_MAGIC = bytes.fromhex("f7cff485b741e288")


def _gateway(region: LakeFSRegion) -> object:
    """boto3 against lakeFS's own S3 gateway: bucket = repository, key = ref/path."""
    return region.s3_gateway_client()


@pytest.mark.parametrize("region_name", ["region-a", "region-b"], ids=["minio", "local"])
def test_write_commit_read_back_through_api_and_s3_gateway(
    region_name: str, client_for: Callable[[str], LakeFSClient], lakefs_env, unique_name
) -> None:
    region = lakefs_env.region(region_name)
    client = client_for(region_name)
    repo = unique_name("smoke")
    created = client.create_repository(repo, region.namespace_for(repo))
    assert created.storage_namespace.startswith(region.namespace_root.rstrip("/"))

    client.upload_object(repo, "main", "api/hello.txt", b"hello through the API")
    gw = _gateway(region)
    gw.put_object(Bucket=repo, Key="main/gw/hello.txt", Body=b"hello through the S3 gateway")
    commit = client.commit(repo, "main", "two objects")

    assert client.get_object(repo, commit.id, "gw/hello.txt") == b"hello through the S3 gateway"
    body = gw.get_object(Bucket=repo, Key=f"{commit.id}/api/hello.txt")["Body"].read()
    assert body == b"hello through the API"
    keys = [o.path for o in client.list_objects(repo, commit.id)]
    assert keys == ["api/hello.txt", "gw/hello.txt"]


def test_commit_ids_recompute_and_range_files_download(client_for, region_a, unique_name) -> None:
    client = client_for("region-a")
    repo = unique_name("facts")
    client.create_repository(repo, region_a.namespace_for(repo))
    client.upload_object(repo, "main", "a.txt", b"a")
    c = client.commit(repo, "main", "first", metadata={"k": "v"})

    # The commit ID is a pure function of the record's fields (lakefs-internals §1.5).
    assert commit_id(c.committer, c.message, c.metarange_id, c.creation_date, c.metadata, list(c.parents)) == c.id

    metarange = client.get_metadata_object(repo, "meta_range", c.metarange_id)
    assert metarange[-8:] == RANGE_MAGIC
    with pytest.raises(LakeFSGone):
        client.get_metadata_object(repo, "range", "0" * 64)


def test_commit_records_on_a_read_only_repository(client_for, region_a, region_b, unique_name) -> None:
    src, dst = client_for("region-a"), client_for("region-b")
    repo = unique_name("src")
    src.create_repository(repo, region_a.namespace_for(repo))
    src.upload_object(repo, "main", "x", b"x")
    c = src.commit(repo, "main", "one")
    root = src.get_commit(repo, c.parents[0])

    mirror = unique_name("mirror")
    dst.create_repository(mirror, region_b.namespace_for(mirror), read_only=True, bare=True)
    assert dst.get_repository(mirror).read_only is True

    with pytest.raises(LakeFSBadRequest):
        dst.create_commit_record(mirror, replace(root, id="f" * 64), force=True)
    with pytest.raises(LakeFSForbidden):
        dst.create_commit_record(mirror, root)
    assert dst.create_commit_record(mirror, root, force=True) is True
    assert dst.create_commit_record(mirror, root, force=True) is False  # 409: already there
    assert dst.create_commit_record(mirror, c, force=True) is True
    # The stored record keeps every field, so the same commit ID is reported back.
    assert dst.get_commit(mirror, c.id) == c

    # A bare repository has no branch; create one on the replicated commit (force), then move it.
    with pytest.raises(LakeFSForbidden):
        dst.create_branch(mirror, "main", root.id)
    dst.create_branch(mirror, "main", root.id, force=True)
    with pytest.raises(LakeFSForbidden):
        dst.hard_reset_branch(mirror, "main", c.id)
    dst.hard_reset_branch(mirror, "main", c.id, force=True)
    assert dst.get_branch_head(mirror, "main") == c.id
    with pytest.raises(LakeFSForbidden):
        dst.upload_object(mirror, "main", "y", b"y")


def test_commit_record_without_metadata_field(client_for, region_b, unique_name) -> None:
    """Open question 1 of the design note: what the server does when ``metadata`` is omitted. lakeFS 1.84
    dereferences the field without a nil check: the handler panics, Go's HTTP server drops the connection
    without an answer (no status at all), records nothing and keeps serving. The same body with ``metadata: {}``
    is recorded (204), which is why the client always sends the field, even empty."""
    client = client_for("region-b")
    repo = unique_name("nometa")
    client.create_repository(repo, region_b.namespace_for(repo), read_only=True, bare=True)
    cid = commit_id("c", "m", "", 1_700_000_000, {}, [])
    body = {
        "commit_id": cid,
        "version": 1,
        "committer": "c",
        "message": "m",
        "metarange_id": "",
        "creation_date": 1_700_000_000,
        "parents": [],
        "generation": 1,
        "force": True,
    }
    assert _post_json(region_b, f"/api/v1/repositories/{repo}/commits", body) == 0, "no HTTP answer at all"
    assert client.healthy(), "the server must survive the request"
    with pytest.raises(LakeFSNotFound):
        client.get_commit(repo, cid)

    assert _post_json(region_b, f"/api/v1/repositories/{repo}/commits", {**body, "metadata": {}}) == 204
    assert client.get_commit(repo, cid).metadata == {}
    # The client's own call, for a commit without metadata, goes through too (it sends ``metadata: {}``).
    other = Commit(
        id=commit_id("c", "n", "", 1_700_000_001, {}, []),
        parents=(),
        committer="c",
        message="n",
        creation_date=1_700_000_001,
        metarange_id="",
        generation=1,
    )
    assert client.create_commit_record(repo, other, force=True) is True
    assert client.get_commit(repo, other.id) == other


def _post_json(region: LakeFSRegion, path: str, body: dict[str, object]) -> int:
    token = b64encode(f"{region.access_key_id}:{region.secret_access_key}".encode()).decode()
    req = urllib.request.Request(
        region.endpoint + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Basic {token}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, ConnectionError):
        return 0
