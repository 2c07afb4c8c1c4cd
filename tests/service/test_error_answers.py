"""Expected failures reaching the API are one JSON answer with their status, never a 500 with a traceback.

No lakeFS here: the service's calls are replaced by ones that fail the way a store, lakeFS or the mirrors
database does, and the credential check accepts everyone.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.errors import LakeFSMirrorError
from lakefs_mirror_dagster.graveler import RecordError
from lakefs_mirror_dagster.lakefs import LakeFSNotFound, LakeFSUnavailable
from lakefs_mirror_dagster.mirrors import MirrorsDatabaseError
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.service import create_app
from lakefs_mirror_dagster.storage import InvalidStorageURI, StorageAccessError, TransientStorageError

MIRRORS = "/service/replication/v1/repositories/repo1/mirrors"
CREATION = {"name": "repo1-mirror", "region": "r2", "storage_namespace": "s3://bucket/repo1"}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ReplicationService]:
    config = tmp_path / "replication.yaml"
    settings = {
        "region": "r1",
        "organization_id": "o",
        "regional_endpoint": "http://127.0.0.1:9",
        "dst_endpoints": {"r2": "http://127.0.0.1:9"},
        "auth": {"encrypt": {"secret_key": "not-a-real-secret"}},
        "lakefs": {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "not-a-real-secret"},
        "blockstore": {"type": "local", "local": {"path": str(tmp_path / "store")}},
        "mirrors_database": {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}},
    }
    config.write_text(yaml.safe_dump(settings))
    svc = ReplicationService(load_config(config, env={}))
    yield svc
    svc.close()


def _client(service: ReplicationService, *, raise_server_exceptions: bool = True) -> TestClient:
    """Signed in as anyone; with ``raise_server_exceptions`` a failure reaching the catch-all 500 fails the test."""
    app = create_app(service, verify=lambda key, secret: "alice")
    basic = base64.b64encode(b"AKIAEXAMPLE:secret").decode()
    return TestClient(app, raise_server_exceptions=raise_server_exceptions, headers={"Authorization": f"Basic {basic}"})


@pytest.fixture
def client(service: ReplicationService) -> TestClient:
    return _client(service)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (InvalidStorageURI("unsupported scheme 'ftp' in 'ftp://x'"), 400),
        (LakeFSNotFound("get repository repo1: lakeFS answered 404", status=404), 404),
        (StorageAccessError("list s3://bucket/repo1: AccessDenied"), 502),
        (TransientStorageError("list s3://bucket/repo1: SlowDown"), 503),
        (LakeFSUnavailable("get repository repo1: lakeFS unreachable"), 503),
        (RecordError("record b'a': bad varint"), 500),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_expected_failure_is_its_status_and_message_without_traceback(
    client: TestClient,
    service: ReplicationService,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: LakeFSMirrorError,
    status: int,
) -> None:
    def fail(**_: object) -> None:
        raise error

    monkeypatch.setattr(service, "create_mirror", fail)
    with caplog.at_level(logging.INFO):
        answer = client.post(MIRRORS, json=CREATION)
    assert (answer.status_code, answer.json()) == (status, {"message": str(error)})
    assert not [r for r in caplog.records if r.exc_info]


def test_mirrors_database_failure_is_503(
    client: TestClient, service: ReplicationService, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(**_: object) -> None:
        raise MirrorsDatabaseError("database is locked")

    monkeypatch.setattr(service.mirrors, "list_mirrors", fail)
    answer = client.get(MIRRORS)
    assert (answer.status_code, answer.json()) == (503, {"message": "database is locked"})


def test_api_errors_keep_their_status_and_headers(service: ReplicationService) -> None:
    answer = TestClient(create_app(service, verify=lambda key, secret: "alice")).get(MIRRORS)
    assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Basic")


def test_a_bug_is_still_a_500_that_names_no_detail(
    service: ReplicationService, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(**_: object) -> None:
        raise KeyError("secret internals")

    monkeypatch.setattr(service, "create_mirror", fail)
    answer = _client(service, raise_server_exceptions=False).post(MIRRORS, json=CREATION)
    assert (answer.status_code, answer.json()) == (500, {"message": "internal error: KeyError"})
