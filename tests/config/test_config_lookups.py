"""What the engine asks the config: endpoints, credentials and source stores per region, database URLs."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy

from lakefs_mirror_dagster.config import ConfigError, parse_config
from tests.config.config_data import minimal


def test_endpoint_for() -> None:
    config = parse_config(minimal())
    assert config.endpoint_for("us-east-1") == "http://lakefs-east:8000"
    assert config.endpoint_for("us-west-2") == "https://lakefs-west.example.com"
    with pytest.raises(ConfigError) as info:
        config.endpoint_for("us-west-3")
    assert info.value.path == "dst_endpoints"
    assert "known regions: us-east-1, us-west-2" in str(info.value)
    assert "did you mean 'us-west-2'?" in str(info.value)


def test_credentials_for_unknown_region() -> None:
    with pytest.raises(ConfigError, match="unknown region 'mars'"):
        parse_config(minimal()).credentials_for("mars")


def test_source_store_for() -> None:
    config = parse_config(minimal(source_stores={"us-west-2": {"type": "s3", "s3": {"region": "us-west-2"}}}))
    store = config.source_store_for("us-west-2")
    assert store is not None and store.s3.region == "us-west-2" and store.backward_compatible
    assert config.source_store_for("us-east-1") is None  # read through the lakeFS API
    with pytest.raises(ConfigError, match="unknown region"):
        config.source_store_for("mars")


def test_sqlite_url_is_usable(tmp_path: Path) -> None:
    config = parse_config(minimal(mirrors_database={"sqlite": {"path": str(tmp_path / "sub" / "m.db")}}))
    url = config.mirrors_database.sqlalchemy_url
    assert url.drivername.startswith("sqlite")
    assert url.database == str(tmp_path / "sub" / "m.db")
    (tmp_path / "sub").mkdir()
    engine = sqlalchemy.create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("select 41 + 1")).scalar() == 42
    engine.dispose()
    assert (tmp_path / "sub" / "m.db").exists()


@pytest.mark.parametrize(
    ("connection_string", "host", "port", "database", "query"),
    [
        (
            "postgres://u:p@db.example.com:5433/mirrors?sslmode=disable",
            "db.example.com",
            5433,
            "mirrors",
            {"sslmode": "disable"},
        ),
        ("postgresql://u:p@localhost/mirrors", "localhost", None, "mirrors", {}),
        (
            "host=127.0.0.1 port=5432 dbname=mirrors user=u password=p sslmode=disable",
            "127.0.0.1",
            5432,
            "mirrors",
            {"sslmode": "disable"},
        ),
    ],
)
def test_postgres_url_forms(
    connection_string: str, host: str, port: int | None, database: str, query: dict[str, str]
) -> None:
    config = parse_config(
        minimal(mirrors_database={"type": "POSTGRES", "postgres": {"connection_string": connection_string}})
    )
    url = config.mirrors_database.sqlalchemy_url
    assert url.drivername == "postgresql+psycopg"  # psycopg 3 is the installed driver
    assert (url.host, url.port, url.database, dict(url.query)) == (host, port, database, query)
    assert (url.username, url.password) == ("u", "p")
