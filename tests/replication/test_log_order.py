"""The same log in the same order (issue 31): commits made within one second, merges among them, are listed by
the mirror exactly as by the source, page by page, when commit records go into the mirror lakeFS's database
(``refstore_database``: PostgreSQL or DynamoDB); through lakeFS's API (whole seconds) they are not, and
``status`` says so.

The history is made with ``lakefs_sdk`` (lakeFS's generated client) straight against the source's lakeFS; the
logs are read back with it too. The mirror region is a lakeFS of its own on PostgreSQL or on DynamoDB Local (the
shared test regions run on local KV, whose database no other process can write).
"""

from __future__ import annotations

import heapq
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import lakefs_sdk
import psycopg
import pytest
from lakefs_mirror_devenv import LakeFSRegion
from lakefs_mirror_devenv.processes import free_port, stop_pid
from lakefs_mirror_devenv.servers import start_lakefs_on

from lakefs_mirror_dagster.config import parse_config
from lakefs_mirror_dagster.graveler import decode_commit_data
from lakefs_mirror_dagster.graveler.commit_record import encode_commit_data
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.region.status import format_status, status_report
from lakefs_mirror_dagster.service.app import mirror_json

pytestmark = pytest.mark.integration

MIRROR_REGION = "region-kv"
PAGE = 2  # small pages: the order across page boundaries is compared too
ATTEMPTS = 8  # histories made until one falls within one second and whole seconds would reorder it


@dataclass
class KVRegion:
    """A lakeFS on a database another process can write, its ``refstore_database`` section, and a reader of
    one record of its key-value store."""

    lakefs: LakeFSRegion
    refstore: dict[str, Any]
    read: Callable[[bytes], bytes]


def _start(name: str, base: Path, region_a: LakeFSRegion, database: dict[str, Any]) -> LakeFSRegion:
    (base / "block").mkdir()
    return start_lakefs_on(
        name,
        base,
        {"type": "local", "local": {"path": str(base / "block")}},
        "local://",
        auth_secret=region_a.auth_secret_key,
        database=database,
    )


@pytest.fixture(scope="module")
def pg_region(
    postgres_server: Any, region_a: LakeFSRegion, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KVRegion]:
    """A lakeFS on PostgreSQL (its own database on the suite's server)."""
    db = f"lakefs_{uuid.uuid4().hex[:12]}"
    postgres_server.make_database(db)
    conn = postgres_server.libpq_url_for(db)
    section = {"type": "postgres", "postgres": {"connection_string": conn}}
    region = _start(MIRROR_REGION, tmp_path_factory.mktemp("region-pg"), region_a, section)

    def read(key: bytes) -> bytes:
        with psycopg.connect(conn) as session:
            [(value,)] = session.execute("SELECT value FROM kv WHERE key = %s", (key,)).fetchall()
        return bytes(value)

    try:
        yield KVRegion(region, section, read)
    finally:
        stop_pid(region.pid)
        postgres_server.drop_database(db)


@pytest.fixture(scope="module")
def dynamodb_region(
    dynamodb_server: Any, region_a: LakeFSRegion, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KVRegion]:
    """A lakeFS on DynamoDB Local (a table of its own, which lakeFS creates)."""
    from lakefs_mirror_devenv.dynamodb_local import ACCESS_KEY_ID, AWS_REGION, SECRET_ACCESS_KEY

    table = f"lakefs-kv-{uuid.uuid4().hex[:12]}"
    settings = {
        "table_name": table,
        "endpoint": dynamodb_server.endpoint,
        "aws_region": AWS_REGION,
        "aws_access_key_id": ACCESS_KEY_ID,
        "aws_secret_access_key": SECRET_ACCESS_KEY,
    }
    section = {"type": "dynamodb", "dynamodb": settings}
    region = _start(MIRROR_REGION, tmp_path_factory.mktemp("region-ddb"), region_a, section)
    client = boto3.client(
        "dynamodb",
        endpoint_url=dynamodb_server.endpoint,
        region_name=AWS_REGION,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    )

    def read(key: bytes) -> bytes:
        found = client.scan(
            TableName=table,
            FilterExpression="ItemKey = :k",
            ExpressionAttributeValues={":k": {"B": key}},
        )["Items"]
        [item] = found
        return bytes(item["ItemValue"]["B"])

    try:
        yield KVRegion(region, section, read)
    finally:
        stop_pid(region.pid)
        client.delete_table(TableName=table)


@pytest.fixture(params=["postgres", "dynamodb"])
def kv_region(request: pytest.FixtureRequest) -> KVRegion:
    return request.getfixturevalue("pg_region" if request.param == "postgres" else "dynamodb_region")


def _config(pg: LakeFSRegion, source: LakeFSRegion, tmp: Path, refstore: dict[str, Any] | None) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "region": MIRROR_REGION,
        "organization_id": "devenv",
        "regional_endpoint": pg.endpoint,
        "dst_endpoints": {source.name: source.endpoint},
        "mirrors_database": {"type": "sqlite", "sqlite": {"path": str(tmp / f"mirrors-{uuid.uuid4().hex[:8]}.db")}},
        "blockstore": pg.blockstore,
        "auth": {"encrypt": {"secret_key": pg.auth_secret_key}},
        "lakefs": {"access_key_id": pg.access_key_id, "secret_access_key": pg.secret_access_key},
        "region_credentials": {
            source.name: {"access_key_id": source.access_key_id, "secret_access_key": source.secret_access_key}
        },
    }
    if refstore is not None:
        raw["refstore_database"] = refstore
    return raw


def _sdk(region: LakeFSRegion) -> lakefs_sdk.ApiClient:
    conf = lakefs_sdk.Configuration(
        host=region.api_url, username=region.access_key_id, password=region.secret_access_key
    )
    return lakefs_sdk.ApiClient(conf)


def _whole_second_order(commits: dict[str, Any], head: str) -> list[str]:
    """The log lakeFS lists from ``head`` when every time is whole seconds: newest first, ties by the larger ID
    (``pkg/graveler/ref/commit_iterator.go``)."""
    heap = [(-commits[head].creation_date, _desc(head), head)]
    seen, out = {head}, []
    while heap:
        _, _, cid = heapq.heappop(heap)
        out.append(cid)
        for parent in commits[cid].parents:
            if parent not in seen:
                seen.add(parent)
                heapq.heappush(heap, (-commits[parent].creation_date, _desc(parent), parent))
    return out


def _desc(commit_id: str) -> tuple[int, ...]:
    return tuple(-b for b in commit_id.encode())


def _make_history(api: lakefs_sdk.ApiClient, repo: str, files: Path) -> list[str]:
    """Five commits within (as far as lakeFS's clock allows) one second on main and feature, a merge among
    them; returns their IDs. Objects are uploaded first so the second holds only commits."""
    objects, branches = lakefs_sdk.ObjectsApi(api), lakefs_sdk.BranchesApi(api)
    commits, refs = lakefs_sdk.CommitsApi(api), lakefs_sdk.RefsApi(api)
    branches.create_branch(repo, lakefs_sdk.BranchCreation(name="feature", source="main"))
    for branch, path in (("main", files / "a.txt"), ("feature", files / "b.txt")):
        path.write_text(path.name)
        objects.upload_object(repo, branch, path.name, content=str(path))
    time.sleep(1 - time.time() % 1)  # start at a second's beginning
    made = [
        commits.commit(repo, "main", lakefs_sdk.CommitCreation(message="one")).id,
        commits.commit(repo, "feature", lakefs_sdk.CommitCreation(message="two")).id,
        commits.commit(repo, "main", lakefs_sdk.CommitCreation(message="three", allow_empty=True)).id,
        refs.merge_into_branch(repo, "feature", "main", merge=lakefs_sdk.Merge(message="four")).reference,
        commits.commit(repo, "main", lakefs_sdk.CommitCreation(message="five", allow_empty=True)).id,
    ]
    return made


def _pages(api: lakefs_sdk.ApiClient, repo: str, ref: str) -> list[list[tuple[Any, ...]]]:
    """The log of ``ref`` page by page, every field of every commit."""
    refs, pages, after = lakefs_sdk.RefsApi(api), [], ""
    for _ in range(100):
        page = refs.log_commits(repo, ref, amount=PAGE, after=after)
        pages.append(
            [
                (
                    c.id,
                    tuple(c.parents),
                    c.committer,
                    c.message,
                    c.creation_date,
                    c.meta_range_id,
                    tuple(sorted((c.metadata or {}).items())),
                    c.generation,
                    c.version,
                )
                for c in page.results
            ]
        )
        if not page.pagination.has_more:
            return pages
        after = page.pagination.next_offset
    raise AssertionError(f"log of {repo}@{ref} has more than 100 pages")


def _same_second_history(source: LakeFSRegion, unique_name: Callable[[str], str], files: Path) -> tuple[str, list[str]]:
    """A source repository whose five commits share one second and whose log whole seconds would reorder."""
    api = _sdk(source)
    repos = lakefs_sdk.RepositoriesApi(api)
    for _ in range(ATTEMPTS):
        repo = unique_name("order")
        repos.create_repository(lakefs_sdk.RepositoryCreation(name=repo, storage_namespace=source.namespace_for(repo)))
        made = _make_history(api, repo, files)
        commits = {c.id: c for c in lakefs_sdk.RefsApi(api).log_commits(repo, "main", amount=1000).results}
        listed = list(commits)
        if len({commits[c].creation_date for c in made}) == 1 and listed != _whole_second_order(commits, listed[0]):
            return repo, made
    raise AssertionError(f"no history of {ATTEMPTS} fell within one second in an order whole seconds change")


def _mirror(service: ReplicationService, pg: LakeFSRegion, source: LakeFSRegion, repo: str, name: str) -> None:
    service.create_mirror(
        source_repository=repo,
        name=name,
        region=MIRROR_REGION,
        storage_namespace=pg.namespace_for(name),
        source_region=source.name,
    )
    [result] = service.sync(name=name)
    assert result.ok, result.to_json()


def test_a_mirror_lists_same_second_commits_in_the_source_order_page_by_page(
    kv_region: KVRegion,
    region_a: LakeFSRegion,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    pg = kv_region.lakefs
    repo, made = _same_second_history(region_a, unique_name, tmp_path)
    name = unique_name("mirror")
    service = ReplicationService(parse_config(_config(pg, region_a, tmp_path, kv_region.refstore)))
    try:
        _mirror(service, pg, region_a, repo, name)
        src, dst = _sdk(region_a), _sdk(pg)
        # Read right after the write, through lakeFS's caches: each commit as the source has it, ...
        for cid in made:
            theirs = lakefs_sdk.CommitsApi(dst).get_commit(name, cid)
            assert theirs == lakefs_sdk.CommitsApi(src).get_commit(repo, cid)
        # ... and every branch's log in the same order, page by page.
        for branch in ("main", "feature"):
            assert _pages(dst, name, branch) == _pages(src, repo, branch), branch
        assert service.log_order == "exact"
        assert "note:" not in format_status(status_report(service, recent=0))
        # What was written is byte for byte what lakeFS writes: a commit lakeFS made itself re-encodes the same
        # (the mirror is read-only: a repository of its own).
        own = unique_name("own")
        lakefs_sdk.RepositoriesApi(dst).create_repository(
            lakefs_sdk.RepositoryCreation(name=own, storage_namespace=pg.namespace_for(own))
        )
        native = lakefs_sdk.CommitsApi(dst).commit(
            own, "main", lakefs_sdk.CommitCreation(message="native", metadata={"k": "v"}, allow_empty=True)
        )
        value = kv_region.read(f"commits/{native.id}".encode())
        assert encode_commit_data(decode_commit_data(value)) == value
    finally:
        service.close()


def test_without_refstore_database_the_order_differs_and_status_says_so(
    pg_region: KVRegion,
    region_a: LakeFSRegion,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """Through lakeFS's API (today's main without the setting) the same history is listed in another order:
    the comparison above catches it."""
    pg = pg_region.lakefs
    repo, _made = _same_second_history(region_a, unique_name, tmp_path)
    name = unique_name("mirror")
    service = ReplicationService(parse_config(_config(pg, region_a, tmp_path, None)))
    try:
        _mirror(service, pg, region_a, repo, name)
        assert _pages(_sdk(pg), name, "main") != _pages(_sdk(region_a), repo, "main")
        assert "log order of same-second commits may differ" in service.log_order
        text = format_status(status_report(service, recent=0))
        assert "note: log order of same-second commits may differ from the source: set refstore_database" in text
        body = mirror_json(service, service.mirror_named(name))
        assert body["log_order"].startswith("log order of same-second commits may differ")
    finally:
        service.close()


def test_an_unreachable_refstore_database_falls_back_to_the_api(
    pg_region: KVRegion,
    region_a: LakeFSRegion,
    unique_name: Callable[[str], str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nobody listens at the configured database: the mirror is still made, commit-exactly, through the API."""
    pg = pg_region.lakefs
    repo, made = _same_second_history(region_a, unique_name, tmp_path)
    name = unique_name("mirror")
    nowhere = f"postgres://u:p@127.0.0.1:{free_port()}/lakefs?sslmode=disable"
    refstore = {"type": "postgres", "postgres": {"connection_string": nowhere}}
    service = ReplicationService(parse_config(_config(pg, region_a, tmp_path, refstore)))
    try:
        _mirror(service, pg, region_a, repo, name)
        dst = lakefs_sdk.CommitsApi(_sdk(pg))
        assert [dst.get_commit(name, c).id for c in made] == made
        assert "go through lakeFS's API" in caplog.text
    finally:
        service.close()
