"""The mirrors database section, and the one place a PostgreSQL connection string becomes a SQLAlchemy URL.

``MirrorsDatabaseConfig.sqlalchemy_url`` is handed to ``MirrorStore`` as a ``URL`` object: the password is
never rendered into a string and parsed again. ``type: dynamodb`` names a DynamoDB table instead (the
reference's usual shared database, a global table); ``mirrors.open_mirrors_database`` picks the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .errors import _FieldError, _Parts
from .values import Secret, _expand_path, _meta, _optional_http_url

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = [
    "DynamoDBSettings",
    "MirrorsDatabaseConfig",
    "PostgresSettings",
    "RefstoreDatabaseConfig",
    "SqliteSettings",
    "postgres_url",
    "with_psycopg",
]


@dataclass(frozen=True, kw_only=True)
class SqliteSettings:
    """A local SQLite file: fine for one host; regions that share mirrors need PostgreSQL."""

    path: str = field(default="~/.lakefs-mirror/mirrors.db", metadata=_meta(_expand_path))


@dataclass(frozen=True, kw_only=True)
class PostgresSettings:
    """A PostgreSQL database shared by every region (URL or ``key=value`` form; holds a password)."""

    connection_string: Secret = field(default_factory=Secret)


# DynamoDB's own rule for table names.
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_AWS_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+)+-\d+$")


def _table_name(value: str) -> str:
    if value and not _TABLE_NAME.match(value):
        raise ValueError(f"invalid DynamoDB table name {value!r}: 3 to 255 of letters, digits, '_', '-' and '.'")
    return value


def _aws_region(value: str) -> str:
    if value and not _AWS_REGION.match(value):
        raise ValueError(f"invalid AWS region {value!r}: expected e.g. us-east-1")
    return value


@dataclass(frozen=True, kw_only=True)
class DynamoDBSettings:
    """A DynamoDB table shared by every region (the names of lakeFS's ``database.dynamodb``).

    The table is created on start when missing. ``aws_region`` falls back to the AWS configuration chain
    (``AWS_REGION``, ``~/.aws/config``); credentials are ``aws_access_key_id``/``aws_secret_access_key``,
    else ``aws_profile``, else the AWS chain (environment, shared files, instance or pod role). ``endpoint``
    points at another endpoint, such as DynamoDB Local.
    """

    table_name: str = field(default="", metadata=_meta(_table_name))
    aws_region: str = field(default="", metadata=_meta(_aws_region))
    endpoint: str = field(default="", metadata=_meta(_optional_http_url))
    aws_profile: str = ""
    aws_access_key_id: str = ""
    aws_secret_access_key: Secret = field(default_factory=Secret)

    def _validate(self, parts: _Parts) -> None:
        if self.aws_access_key_id and not self.aws_secret_access_key:
            raise _FieldError((*parts, "aws_secret_access_key"), "required when aws_access_key_id is set")
        if self.aws_secret_access_key and not self.aws_access_key_id:
            raise _FieldError((*parts, "aws_access_key_id"), "required when aws_secret_access_key is set")
        if self.aws_profile and self.aws_access_key_id:
            raise _FieldError((*parts, "aws_profile"), "set either aws_profile or aws_access_key_id, not both")


@dataclass(frozen=True, kw_only=True)
class MirrorsDatabaseConfig:
    """Where mirror definitions and validation caches live (shared by all regions with PostgreSQL or DynamoDB)."""

    type: Literal["sqlite", "postgres", "dynamodb"] = "sqlite"
    sqlite: SqliteSettings = field(default_factory=SqliteSettings)
    postgres: PostgresSettings = field(default_factory=PostgresSettings)
    dynamodb: DynamoDBSettings = field(default_factory=DynamoDBSettings)

    @property
    def sqlalchemy_url(self) -> URL:
        """The SQLAlchemy URL (psycopg 3 driver for PostgreSQL); its ``str()`` masks the password."""
        from sqlalchemy.engine import URL

        if self.type == "dynamodb":
            raise ValueError("a DynamoDB mirrors database has no SQLAlchemy URL")
        if self.type == "sqlite":
            path = self.sqlite.path
            return URL.create("sqlite+pysqlite", database=None if path == ":memory:" else path)
        return postgres_url(self.postgres.connection_string.reveal())

    def _validate(self, parts: _Parts) -> None:
        if self.type == "dynamodb" and not self.dynamodb.table_name:
            raise _FieldError((*parts, "dynamodb", "table_name"), "required when mirrors_database.type is dynamodb")
        if self.type == "postgres":
            where = (*parts, "postgres", "connection_string")
            if not self.postgres.connection_string:
                raise _FieldError(where, "required when mirrors_database.type is postgres")
            try:
                postgres_url(self.postgres.connection_string.reveal())
            except ValueError as exc:
                raise _FieldError(where, str(exc)) from None


@dataclass(frozen=True, kw_only=True)
class RefstoreDatabaseConfig:
    """This region's lakeFS database (lakeFS's own ``database`` section), into which mirrored commit records are
    written with the source's full-precision creation time, so a mirror's log lists same-second commits in the
    source's order (lakeFS's API takes whole seconds). PostgreSQL or DynamoDB (table ``kvstore`` unless named)."""

    type: Literal["postgres", "dynamodb"]
    postgres: PostgresSettings = field(default_factory=PostgresSettings)
    dynamodb: DynamoDBSettings = field(default_factory=DynamoDBSettings)

    def _validate(self, parts: _Parts) -> None:
        if self.type == "dynamodb":
            return
        where = (*parts, "postgres", "connection_string")
        if not self.postgres.connection_string:
            raise _FieldError(where, "required when refstore_database.type is postgres")
        try:
            postgres_url(self.postgres.connection_string.reveal())
        except ValueError as exc:
            raise _FieldError(where, str(exc)) from None


_PG_HELP = "expected e.g. postgres://user:password@host:5432/dbname or 'host=... dbname=... user=...'"


def with_psycopg(url: URL) -> URL:
    """The PostgreSQL driver rule: ``postgres://`` and ``postgresql://`` mean psycopg 3 (the driver this
    package ships; SQLAlchemy would pick psycopg2 or not know the scheme), ``postgres+x`` is ``postgresql+x``.
    Other URLs are returned as they are."""
    backend, _, driver = url.drivername.partition("+")
    if backend not in ("postgres", "postgresql"):
        return url
    return url.set(drivername=f"postgresql+{driver or 'psycopg'}")


def postgres_url(connection_string: str) -> URL:
    """Turn a lakeFS-style PostgreSQL connection string (URL or ``key=value`` form) into a SQLAlchemy URL
    for psycopg 3, without echoing it in errors."""
    from sqlalchemy.engine import URL, make_url
    from sqlalchemy.exc import ArgumentError

    text = connection_string.strip()
    if "://" in text:
        try:
            url = make_url(text)
        except (ArgumentError, ValueError):
            raise ValueError(f"not a valid PostgreSQL connection string ({_PG_HELP})") from None
        if url.drivername.partition("+")[0] not in ("postgres", "postgresql"):
            raise ValueError(f"unsupported URL scheme {url.drivername!r} for PostgreSQL ({_PG_HELP})")
        return with_psycopg(url)
    from ..errors import needs_extra

    with needs_extra("postgres", "a PostgreSQL mirrors database"):
        from psycopg.conninfo import conninfo_to_dict
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(text).items() if v is not None}
    except Exception:
        raise ValueError(f"not a valid PostgreSQL connection string ({_PG_HELP})") from None
    if not params:
        raise ValueError(f"not a valid PostgreSQL connection string ({_PG_HELP})")
    port = params.pop("port", None)
    if port is not None and not port.isdigit():
        raise ValueError("the port in the PostgreSQL connection string is not a number")
    return URL.create(
        "postgresql+psycopg",
        username=params.pop("user", None),
        password=params.pop("password", None),
        host=params.pop("host", None),
        port=int(port) if port is not None else None,
        database=params.pop("dbname", None),
        query=params,
    )
