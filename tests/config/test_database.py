"""The mirrors database URL goes from the config to ``MirrorStore`` as a typed ``URL``: the password is never
rendered into a string and parsed again, and one function decides the PostgreSQL driver."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
from sqlalchemy.engine import URL, make_url

import lakefs_mirror_dagster.mirrors.sql.store as store_module
from lakefs_mirror_dagster.config import parse_config
from lakefs_mirror_dagster.config.database import with_psycopg
from lakefs_mirror_dagster.mirrors import Organization
from lakefs_mirror_dagster.region import ReplicationService


class FakeMirrorStore:
    opened: ClassVar[list[Any]] = []

    def __init__(self, url: Any, **_: Any) -> None:
        FakeMirrorStore.opened.append(url)

    def create_tables(self) -> None:
        pass

    def claim_organization(self, organization_id: str, fingerprint: str, region: str) -> Organization:
        return Organization(organization_id, fingerprint, region, datetime.now(UTC))

    def organization_ids(self) -> list[str]:
        return []

    def close(self) -> None:
        pass


def test_the_service_hands_the_mirror_store_a_url_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MirrorStore", FakeMirrorStore)
    FakeMirrorStore.opened.clear()
    config = parse_config(
        {
            "region": "us-east-1",
            "organization_id": "my-org",
            "regional_endpoint": "http://lakefs-east:8000",
            "blockstore": {"type": "local"},
            "auth": {"encrypt": {"secret_key": "auth-secret"}},
            "lakefs": {"access_key_id": "AKIAREPLICATOR", "secret_access_key": "replicator-secret"},
            "mirrors_database": {
                "type": "postgres",
                "postgres": {"connection_string": "postgres://repl:p%40ss@db.example.com:5432/mirrors"},
            },
        },
        env={},
    )
    ReplicationService(config).close()
    [url] = FakeMirrorStore.opened
    assert isinstance(url, URL)
    assert url.drivername == "postgresql+psycopg"
    assert url.password == "p@ss" and url.host == "db.example.com" and url.database == "mirrors"


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgres://u@h/d", "postgresql+psycopg"),
        ("postgresql://u@h/d", "postgresql+psycopg"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg"),
        ("postgres+psycopg://u@h/d", "postgresql+psycopg"),
        ("sqlite:///m.db", "sqlite"),
    ],
)
def test_one_rule_picks_the_postgres_driver(given: str, driver: str) -> None:
    assert with_psycopg(make_url(given)).drivername == driver
