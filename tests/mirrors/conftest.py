"""Fixtures for the mirrors database tests: a real PostgreSQL server and the session's DynamoDB Local
(``tests/conftest.py``), with a fresh database (or table) per test.

A missing PostgreSQL or Java, or a failed start, makes the tests error with the server's reason; nothing skips.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from lakefs_mirror_devenv.postgres import PostgresServer

from lakefs_mirror_dagster.config.database import (
    MirrorsDatabaseConfig,
    PostgresSettings,
    SqliteSettings,
)
from lakefs_mirror_dagster.config.values import Secret
from lakefs_mirror_dagster.mirrors import MirrorsDatabase, open_mirrors_database


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL (fsync off) for the whole session."""
    server = PostgresServer.start(Path(tmp_path_factory.mktemp("mirrors-postgres")), durable=False, stop_at_exit=True)
    try:
        yield server
    finally:
        server.stop(remove_data=True)


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """URL of a brand-new, empty database on the session server, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:20]}"
    url = pg_server.make_database(name)
    try:
        yield url
    finally:
        pg_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The SQL store's own tests against a SQLite file and against the real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'mirrors.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", "postgresql", "dynamodb"])
def db_config(request: pytest.FixtureRequest, tmp_path: Path) -> MirrorsDatabaseConfig:
    """The same contract tests against a SQLite file, the real PostgreSQL and DynamoDB Local."""
    if request.param == "sqlite":
        return MirrorsDatabaseConfig(type="sqlite", sqlite=SqliteSettings(path=str(tmp_path / "mirrors.db")))
    if request.param == "postgresql":
        url = str(request.getfixturevalue("pg_url"))
        return MirrorsDatabaseConfig(type="postgres", postgres=PostgresSettings(connection_string=Secret(url)))
    return MirrorsDatabaseConfig(type="dynamodb", dynamodb=request.getfixturevalue("dynamodb_settings"))


@pytest.fixture
def store(db_config: MirrorsDatabaseConfig) -> Iterator[MirrorsDatabase]:
    with open_mirrors_database(db_config) as opened:
        yield opened


def mirror_id_in(store: MirrorsDatabase, name: str = "mirror") -> str:
    """The id of a new mirror ``name`` in ``store`` (for tests of what is kept per mirror)."""
    return store.create_mirror(
        organization_id="org",
        source_region="east",
        source_repository="repo",
        name=name,
        destination_region="west",
        storage_namespace=f"s3://bucket/{name}",
    ).id
