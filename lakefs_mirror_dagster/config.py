"""The replication service's configuration: one typed, frozen tree read from YAML plus ``REPLICATION_`` env.

Why a hand-written loader instead of a generic one: a misconfigured replication service must refuse to start
with *one* message that names the exact field (``commit_sensor.process_branches_duration: ...``), suggests
the key that was probably meant, says whether the bad value came from the file or from which environment
variable, and never prints a secret. The schema is plain frozen dataclasses; the loader walks their type
hints, so the schema is the single source of truth for YAML keys, environment variable names, defaults and
the example file.

Shape and defaults follow the Transactional Mirroring reference ("Configuration Reference") and, for storage,
lakeFS's own ``blockstore`` / ``blockstores`` sections (multi-storage reference); the sections ``lakefs``,
``region_credentials``, ``transfer``, ``spark``, ``source_stores`` and the sqlite/postgres
``mirrors_database`` are this implementation's own.
"""

from __future__ import annotations

import dataclasses
import difflib
import hmac
import itertools
import json
import logging
import os
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints
from urllib.parse import urlsplit

import yaml

from .errors import LakeFSMirrorError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = [
    "CONFIG_PATH_ENV",
    "ENV_PREFIX",
    "AuthApiConfig",
    "AuthCacheConfig",
    "AuthConfig",
    "AzureSettings",
    "BlockstoreConfig",
    "BlockstoreType",
    "BlockstoresConfig",
    "ByteSize",
    "CommitSensorConfig",
    "ConfigError",
    "EncryptConfig",
    "GSSettings",
    "LakeFSCredentials",
    "LocalSettings",
    "LoggingConfig",
    "MirrorsDatabaseConfig",
    "MirrorsManagerConfig",
    "PostgresSettings",
    "ReplicationConfig",
    "S3Credentials",
    "S3Settings",
    "Secret",
    "SigningConfig",
    "SparkConfig",
    "SqliteSettings",
    "StoreConfig",
    "TransferConfig",
    "ValidatorConfig",
    "dump_example_config",
    "format_duration",
    "load_config",
    "parse_byte_size",
    "parse_config",
    "parse_duration",
]

ENV_PREFIX = "REPLICATION_"
#: Names the config file when ``load_config`` gets no path (read by the loader, never a setting itself).
CONFIG_PATH_ENV = "REPLICATION_CONFIG"

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

_REDACTED = "**********"


# --------------------------------------------------------------------------------------------------------
# Errors, secrets, durations, sizes
# --------------------------------------------------------------------------------------------------------


class ConfigError(LakeFSMirrorError, ValueError):
    """One configuration problem; ``path`` is the dotted field path it concerns ("" when none applies)."""

    def __init__(self, problem: str, *, path: str = "", origin: str = "") -> None:
        self.problem = problem
        self.path = path
        self.origin = origin
        text = f"{path}: {problem}" if path else problem
        if origin:
            text += f" ({origin})"
        super().__init__(text)


_Parts = tuple[str | int, ...]


class _FieldError(ConfigError):
    """Raised while building: keeps the raw path so the loader can say where the value came from."""

    def __init__(self, parts: _Parts, problem: str) -> None:
        self.parts = parts
        super().__init__(problem, path=_dotted(parts))


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _dotted(parts: _Parts) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


class Secret:
    """A string that prints as ``**********`` so that logging a config never leaks credentials.

    ``reveal()`` is the only way to the value; equality is constant-time.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        if not isinstance(value, str):
            raise TypeError(f"Secret holds a str, not {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """The secret value itself; pass it straight to the client that needs it, never to a logger."""
        return self._value

    get_secret_value = reveal  # the name pydantic users expect

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret('{_REDACTED}')" if self._value else "Secret('')"

    def __str__(self) -> str:
        return _REDACTED if self._value else ""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        return (Secret, (self._value,))


_DURATION_UNITS_US: dict[str, Fraction] = {
    "ns": Fraction(1, 1000),
    "us": Fraction(1),
    "µs": Fraction(1),  # Go accepts both micro signs
    "μs": Fraction(1),
    "ms": Fraction(1000),
    "s": Fraction(1_000_000),
    "m": Fraction(60_000_000),
    "h": Fraction(3_600_000_000),
}
_DURATION_TERM = r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)"
_DURATION_RE = re.compile(rf"([+-]?)((?:{_DURATION_TERM})+)")
_DURATION_TERM_RE = re.compile(_DURATION_TERM)
_DURATION_HELP = "expected a number with a unit (ns, us, ms, s, m, h), e.g. '500ms', '20s', '1m', '1h30m'"


def parse_duration(value: str | timedelta) -> timedelta:
    """Parse a Go-style duration (``"1m"``, ``"20s"``, ``"1h30m"``, ``"500ms"``, ``"1.5h"``) into a timedelta.

    Go's syntax because the reference's defaults are written in it and lakeFS users know it. Bare numbers
    other than ``0`` are rejected: ``10`` could mean seconds or minutes.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"invalid duration {value!r}: {_DURATION_HELP}")
    if isinstance(value, int | float):
        if value == 0:
            return timedelta(0)
        raise ValueError(f"invalid duration {value!r}: missing unit; write e.g. '{value}s' or '{value}m'")
    text = value.strip()
    if text in ("0", "+0", "-0"):
        return timedelta(0)
    match = _DURATION_RE.fullmatch(text)
    if not match:
        hint = "; days are not a unit, use hours (e.g. '24h')" if text.endswith("d") else ""
        raise ValueError(f"invalid duration {value!r}: {_DURATION_HELP}{hint}")
    total = Fraction(0)
    for number, unit in _DURATION_TERM_RE.findall(match.group(2)):
        total += Fraction(number) * _DURATION_UNITS_US[unit]
    micros = round(total)
    return timedelta(microseconds=-micros if match.group(1) == "-" else micros)


def format_duration(value: timedelta) -> str:
    """The shortest Go-style text for ``value`` (``timedelta(minutes=90)`` -> ``"1h30m"``); parses back."""
    micros = value // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, rest = divmod(rest, 1_000_000)
    millis, rest = divmod(rest, 1000)
    text = "".join(
        f"{amount}{unit}"
        for amount, unit in ((hours, "h"), (minutes, "m"), (seconds, "s"), (millis, "ms"), (rest, "us"))
        if amount
    )
    return sign + text


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": 1024 * GiB,
}
_SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)")


def parse_byte_size(value: str | int) -> int:
    """Parse a byte count: an integer, or a number with a unit (``"64MiB"``, ``"16 MiB"``, ``"1.5GB"``).

    Bare ``K``/``M``/``G`` are refused because they are ambiguous between 1000- and 1024-based units.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"invalid byte size {value!r}: expected an integer or e.g. '64MiB'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"invalid byte size {value}: must not be negative")
        return value
    match = _SIZE_RE.fullmatch(value.strip())
    if not match:
        raise ValueError(f"invalid byte size {value!r}: expected an integer or a size such as '64MiB' or '16MB'")
    number, unit = match.group(1), match.group(2).lower()
    if unit in ("k", "m", "g", "t"):
        raise ValueError(
            f"invalid byte size {value!r}: unit {match.group(2)!r} is ambiguous; "
            f"write {unit.upper()}iB (powers of 1024) or {unit.upper()}B (powers of 1000)"
        )
    if unit not in _SIZE_UNITS:
        raise ValueError(
            f"invalid byte size {value!r}: unknown unit {match.group(2)!r} (use B, KiB, MiB, GiB, KB, MB, GB)"
        )
    amount = Fraction(number) * _SIZE_UNITS[unit]
    if amount.denominator != 1:
        raise ValueError(f"invalid byte size {value!r}: not a whole number of bytes")
    return int(amount)


class _Marker:
    """Tags an ``Annotated`` type with how to parse it (the Python type alone is just ``int``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_BYTE_SIZE = _Marker("byte size")
#: An ``int`` number of bytes that the config accepts as ``67108864`` or ``"64MiB"``.
ByteSize = Annotated[int, _BYTE_SIZE]


# --------------------------------------------------------------------------------------------------------
# Field checks (normalise or refuse a converted value; raise ValueError with the problem)
# --------------------------------------------------------------------------------------------------------

_Check = Callable[[Any], Any]


def _at_least(minimum: int | timedelta) -> _Check:
    def check(value: Any) -> Any:
        if value < minimum:
            shown = format_duration(minimum) if isinstance(minimum, timedelta) else minimum
            got = format_duration(value) if isinstance(value, timedelta) else value
            raise ValueError(f"must be at least {shown}, got {got}")
        return value

    return check


def _positive_duration(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError(f"must be a positive duration, got {format_duration(value)}")
    return value


def _between(low: int, high: int, why: str) -> _Check:
    def check(value: int) -> int:
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high} bytes ({why}), got {value}")
        return value

    return check


def _http_url(value: str) -> str:
    """Accept ``http(s)://host[:port][/path]``, minus a trailing ``/`` or ``/api/v1``: the base URL."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise ValueError(f"{value!r} must not have a query or fragment")
    try:
        _ = parts.port
    except ValueError as exc:
        raise ValueError(f"{value!r} has an invalid port") from exc
    base = value.rstrip("/")
    if base.endswith("/api/v1"):
        base = base[: -len("/api/v1")].rstrip("/")
    return base


def _optional_http_url(value: str) -> str:
    return _http_url(value) if value else value


def _nonempty(value: str | Secret) -> str | Secret:
    if not (value.reveal() if isinstance(value, Secret) else value).strip():
        raise ValueError("must not be empty")
    return value


_REGION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_STORE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")  # lakeFS's own rule for blockstores.stores[].id


def _region_name(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    if not _REGION_RE.match(value):
        raise ValueError(
            f"invalid region name {value!r}: use letters, digits, '.', '_' and '-', starting with a letter or digit"
        )
    return value


def _store_id(value: str) -> str:
    if not value:
        raise ValueError("must not be empty (every store in blockstores.stores needs an id)")
    if not _STORE_ID_RE.match(value):
        raise ValueError(
            f"invalid store id {value!r}: use letters, digits, '_' and '-', starting with a letter or digit"
        )
    return value


def _expand_path(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value if value == ":memory:" else os.path.expanduser(value)


def _listen_address(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"invalid listen address {value!r}: expected host:port, e.g. '0.0.0.0:8008'")
    if host.startswith("[") != host.endswith("]"):
        raise ValueError(f"invalid listen address {value!r}: unbalanced brackets around the IPv6 host")
    return value


_SSE_VALUES = ("", "AES256", "aws:kms", "aws:kms:dsse")


def _s3_sse(value: str) -> str:
    if value not in _SSE_VALUES:
        raise ValueError(f"unsupported value {value!r}; expected one of: {', '.join(repr(v) for v in _SSE_VALUES)}")
    return value


def _meta(
    check: _Check | None = None,
    *,
    key_check: _Check | None = None,
    value_check: _Check | None = None,
    stringify: bool = False,
    region_keyed: bool = False,
    doc: str = "",
) -> dict[str, Any]:
    """Field metadata read by the loader: checks for the value / map keys / map values, and env hints."""
    return {
        "check": check,
        "key_check": key_check,
        "value_check": value_check,
        "stringify": stringify,
        "region_keyed": region_keyed,
        "doc": doc,
    }


# --------------------------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------------------------

BlockstoreType = Literal["s3", "local", "gs", "azure"]


@dataclass(frozen=True, kw_only=True)
class S3Credentials:
    """Static S3 credentials; leave all empty to use the AWS default credential chain."""

    access_key_id: str = ""
    secret_access_key: Secret = field(default_factory=Secret)
    session_token: Secret = field(default_factory=Secret)

    def _validate(self, parts: _Parts) -> None:
        if self.access_key_id and not self.secret_access_key:
            raise _FieldError((*parts, "secret_access_key"), "required when access_key_id is set")
        if self.secret_access_key and not self.access_key_id:
            raise _FieldError((*parts, "access_key_id"), "required when secret_access_key is set")
        if self.session_token and not self.access_key_id:
            raise _FieldError((*parts, "session_token"), "needs access_key_id and secret_access_key as well")


@dataclass(frozen=True, kw_only=True)
class S3Settings:
    """The subset of lakeFS's ``blockstore.s3`` that reading and writing objects needs (lakeFS defaults)."""

    endpoint: str = field(default="", metadata=_meta(_optional_http_url))
    region: str = "us-east-1"
    force_path_style: bool = False
    discover_bucket_region: bool = True
    profile: str = ""
    credentials_file: str = ""
    credentials: S3Credentials = field(default_factory=S3Credentials)
    max_retries: int = field(default=5, metadata=_meta(_at_least(0)))
    skip_verify_certificate_test_only: bool = False
    server_side_encryption: str = field(default="", metadata=_meta(_s3_sse))
    server_side_encryption_kms_key_id: str = ""


@dataclass(frozen=True, kw_only=True)
class LocalSettings:
    """lakeFS's ``blockstore.local``; ``path`` is ``~``-expanded like lakeFS does."""

    path: str = field(default="~/lakefs/data/block", metadata=_meta(_expand_path))
    import_enabled: bool = False
    import_hidden: bool = False
    allowed_external_prefixes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class GSSettings:
    """lakeFS's ``blockstore.gs``, plus ``endpoint`` (ours): an emulator such as fake-gcs-server or a private
    endpoint, used anonymously when no credentials are given. Without credentials or endpoint, Google's
    application default credentials apply. ``s3_endpoint`` is lakeFS's and unused here."""

    s3_endpoint: str = field(default="https://storage.googleapis.com", metadata=_meta(_optional_http_url))
    endpoint: str = field(default="", metadata=_meta(_optional_http_url))
    credentials_file: str = ""
    credentials_json: Secret = field(default_factory=Secret)
    server_side_encryption_kms_key_id: str = ""

    def _validate(self, parts: _Parts) -> None:
        if self.credentials_file and self.credentials_json:
            raise _FieldError((*parts, "credentials_json"), "give credentials_json or credentials_file, not both")


@dataclass(frozen=True, kw_only=True)
class AzureSettings:
    """lakeFS's ``blockstore.azure``; objects are read and written with the account key.
    ``test_endpoint_url`` points at an emulator (Azurite) as in lakeFS."""

    storage_account: str = ""
    storage_access_key: Secret = field(default_factory=Secret)
    domain: str = "blob.core.windows.net"
    test_endpoint_url: str = field(default="", metadata=_meta(_optional_http_url))
    try_timeout: timedelta = field(default=timedelta(minutes=10), metadata=_meta(_positive_duration))


StoreSettings = S3Settings | LocalSettings | GSSettings | AzureSettings


@dataclass(frozen=True, kw_only=True)
class BlockstoreConfig:
    """One storage backend shaped like lakeFS's ``blockstore`` section; ``type`` picks the active settings."""

    type: BlockstoreType
    s3: S3Settings = field(default_factory=S3Settings)
    local: LocalSettings = field(default_factory=LocalSettings)
    gs: GSSettings = field(default_factory=GSSettings)
    azure: AzureSettings = field(default_factory=AzureSettings)

    @property
    def settings(self) -> StoreSettings:
        """The settings section that ``type`` selects."""
        section: StoreSettings = getattr(self, self.type)
        return section

    def _validate(self, parts: _Parts) -> None:
        if self.type == "azure" and not self.azure.storage_account:
            raise _FieldError((*parts, "azure", "storage_account"), "required when type is azure")
        if self.type == "azure" and not self.azure.storage_access_key:
            raise _FieldError(
                (*parts, "azure", "storage_access_key"),
                "required when type is azure (the replication service authenticates with the account key)",
            )


@dataclass(frozen=True, kw_only=True)
class StoreConfig(BlockstoreConfig):
    """One entry of ``blockstores.stores`` (and the normalised form of every store this config names).

    ``id`` is the lakeFS storage id repositories refer to; ``backward_compatible`` marks the store that
    repositories *without* a storage id (created before multi-storage, or on open-source lakeFS) live on.
    """

    id: str = field(metadata=_meta(_store_id))
    description: str = ""
    backward_compatible: bool = False

    @classmethod
    def from_blockstore(cls, blockstore: BlockstoreConfig, *, store_id: str = "") -> StoreConfig:
        """The single-store form as a store: id ``""``, backward compatible (what lakeFS does internally)."""
        values = {f.name: getattr(blockstore, f.name) for f in dataclasses.fields(BlockstoreConfig)}
        return cls(id=store_id, description="", backward_compatible=True, **values)


@dataclass(frozen=True, kw_only=True)
class SigningConfig:
    """``blockstores.signing``: accepted so lakeFS's section can be copied verbatim; not used here."""

    secret_key: Secret = field(default_factory=Secret)


@dataclass(frozen=True, kw_only=True)
class BlockstoresConfig:
    """lakeFS's multi-storage ``blockstores`` section (mutually exclusive with ``blockstore``)."""

    signing: SigningConfig = field(default_factory=SigningConfig)
    stores: tuple[StoreConfig, ...]

    def _validate(self, parts: _Parts) -> None:
        if not self.stores:
            raise _FieldError((*parts, "stores"), "must list at least one store")
        seen: dict[str, int] = {}
        compatible: int | None = None
        for index, store in enumerate(self.stores):
            where = (*parts, "stores", index)
            if store.id in seen:
                first = _dotted((*parts, "stores", seen[store.id]))
                raise _FieldError(
                    (*where, "id"),
                    f"duplicate store id {store.id!r} (already used by {first}); "
                    "each storage backend needs a unique id",
                )
            seen[store.id] = index
            if store.backward_compatible:
                if compatible is not None:
                    first = _dotted((*parts, "stores", compatible))
                    raise _FieldError(
                        (*where, "backward_compatible"),
                        f"only one store may be backward_compatible: true, and {first} already is",
                    )
                compatible = index


@dataclass(frozen=True, kw_only=True)
class SqliteSettings:
    """A local SQLite file: fine for one host; regions that share mirrors need PostgreSQL."""

    path: str = field(default="~/.lakefs-mirror/mirrors.db", metadata=_meta(_expand_path))


@dataclass(frozen=True, kw_only=True)
class PostgresSettings:
    """A PostgreSQL database shared by every region (URL or ``key=value`` form; holds a password)."""

    connection_string: Secret = field(default_factory=Secret)


@dataclass(frozen=True, kw_only=True)
class MirrorsDatabaseConfig:
    """Where mirror definitions and validation caches live (shared by all regions with PostgreSQL)."""

    type: Literal["sqlite", "postgres"] = "sqlite"
    sqlite: SqliteSettings = field(default_factory=SqliteSettings)
    postgres: PostgresSettings = field(default_factory=PostgresSettings)

    @property
    def sqlalchemy_url(self) -> URL:
        """The SQLAlchemy URL (psycopg 3 driver for PostgreSQL); its ``str()`` masks the password."""
        from sqlalchemy.engine import URL

        if self.type == "sqlite":
            path = self.sqlite.path
            return URL.create("sqlite+pysqlite", database=None if path == ":memory:" else path)
        return _postgres_url(self.postgres.connection_string.reveal())

    def _validate(self, parts: _Parts) -> None:
        if self.type == "postgres":
            where = (*parts, "postgres", "connection_string")
            if not self.postgres.connection_string:
                raise _FieldError(where, "required when mirrors_database.type is postgres")
            try:
                _postgres_url(self.postgres.connection_string.reveal())
            except ValueError as exc:
                raise _FieldError(where, str(exc)) from None


_PG_HELP = "expected e.g. postgres://user:password@host:5432/dbname or 'host=... dbname=... user=...'"


def _postgres_url(connection_string: str) -> URL:
    """Turn a lakeFS-style PostgreSQL connection string into a SQLAlchemy URL without echoing it."""
    from sqlalchemy.engine import URL, make_url
    from sqlalchemy.exc import ArgumentError

    text = connection_string.strip()
    if "://" in text:
        try:
            url = make_url(text)
        except (ArgumentError, ValueError):
            raise ValueError(f"not a valid PostgreSQL connection string ({_PG_HELP})") from None
        scheme = url.drivername
        if scheme in ("postgres", "postgresql"):
            return url.set(drivername="postgresql+psycopg")
        if scheme.startswith("postgresql+"):
            return url
        raise ValueError(f"unsupported URL scheme {scheme!r} for PostgreSQL ({_PG_HELP})")
    try:
        from psycopg.conninfo import conninfo_to_dict

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


@dataclass(frozen=True, kw_only=True)
class EncryptConfig:
    """``auth.encrypt``; the key must equal the lakeFS installation's ``auth.encrypt.secret_key``."""

    secret_key: Secret = field(metadata=_meta(_nonempty))


@dataclass(frozen=True, kw_only=True)
class AuthApiConfig:
    """``auth.api``: an external auth service; empty means lakeFS's own (KV-based) auth."""

    endpoint: str = field(default="", metadata=_meta(_optional_http_url))


@dataclass(frozen=True, kw_only=True)
class AuthCacheConfig:
    """``auth.cache``; size and TTL default to lakeFS's own auth cache defaults (1024 entries, 20s)."""

    enabled: bool = False
    size: int = field(default=1024, metadata=_meta(_at_least(1)))
    ttl: timedelta = field(default=timedelta(seconds=20), metadata=_meta(_positive_duration))


@dataclass(frozen=True, kw_only=True)
class AuthConfig:
    """``auth``: how the service API checks the callers' lakeFS credentials."""

    encrypt: EncryptConfig
    api: AuthApiConfig = field(default_factory=AuthApiConfig)
    cache: AuthCacheConfig = field(default_factory=AuthCacheConfig)


_PYTHON_LEVELS = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
}


@dataclass(frozen=True, kw_only=True)
class LoggingConfig:
    """``logging``: level (``WARNING`` is accepted for ``WARN``) and ``text`` or ``json`` format."""

    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"

    @property
    def python_level(self) -> int:
        """The ``logging`` module's number for ``level``."""
        return _PYTHON_LEVELS[self.level]


@dataclass(frozen=True, kw_only=True)
class CommitSensorConfig:
    """``commit_sensor``: how often and how widely source branches are scanned for new commits."""

    process_branches_duration: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_positive_duration))
    branches_scanner_concurrency_limit: int = field(default=10, metadata=_meta(_at_least(1)))
    list_branch_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))
    log_commit_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))


@dataclass(frozen=True, kw_only=True)
class MirrorsManagerConfig:
    """``mirrors_manager``: how often mirror definitions are reconciled with the destinations."""

    process_mirrors_interval_duration: timedelta = field(
        default=timedelta(seconds=20), metadata=_meta(_positive_duration)
    )


@dataclass(frozen=True, kw_only=True)
class ValidatorConfig:
    """``validator``: checks that everything a commit references is at the destination before promotion."""

    run_interval: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_positive_duration))
    num_workers: int = field(default=3, metadata=_meta(_at_least(1)))
    cooldown_on_missing: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_at_least(timedelta(0))))
    cooldown_on_error: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_at_least(timedelta(0))))


@dataclass(frozen=True, kw_only=True)
class LakeFSCredentials:
    """The replication user's lakeFS access key (same on every installation, per the reference)."""

    access_key_id: str = ""
    secret_access_key: Secret = field(default_factory=Secret)

    def _validate(self, parts: _Parts) -> None:
        if self.access_key_id and not self.secret_access_key:
            raise _FieldError((*parts, "secret_access_key"), "required when access_key_id is set")
        if self.secret_access_key and not self.access_key_id:
            raise _FieldError((*parts, "access_key_id"), "required when secret_access_key is set")

    @property
    def is_set(self) -> bool:
        return bool(self.access_key_id)


@dataclass(frozen=True, kw_only=True)
class TransferConfig:
    """``transfer``: how objects and metadata files are moved (``copy``) or awaited (``external``)."""

    concurrency: int = field(default=16, metadata=_meta(_at_least(1)))
    multipart_threshold: ByteSize = field(
        default=64 * MiB, metadata=_meta(_between(1, 5 * GiB, "S3 single uploads stop at 5 GiB"))
    )
    multipart_chunk_size: ByteSize = field(
        default=16 * MiB, metadata=_meta(_between(5 * MiB, 5 * GiB, "S3 parts are 5 MiB to 5 GiB"))
    )
    strict_full_addresses: bool = False
    mode: Literal["copy", "external"] = "copy"


@dataclass(frozen=True, kw_only=True)
class SparkConfig:
    """``spark``: the session used for distributed validation (and, when enabled, object transfer);
    ``conf`` values are passed as strings. Transfers of fewer than ``transfer_threshold_objects`` objects
    stay in-process: below it Spark's scheduling costs more than it saves (``benchmarks/transfer_paths.py``)."""

    master: str = field(default="local[*]", metadata=_meta(_nonempty))
    conf: Mapping[str, str] = field(default_factory=dict, metadata=_meta(stringify=True))
    transfer_enabled: bool = False
    # Measured crossover on a loaded 2-core machine, local[2]: ~5,750 objects (benchmarks/transfer_paths.py).
    transfer_threshold_objects: int = field(default=6000, metadata=_meta(_at_least(0)))
    transfer_max_partitions: int = field(default=8, metadata=_meta(_at_least(1)))
    validation_threshold_ranges: int = field(default=16, metadata=_meta(_at_least(0)))


@dataclass(frozen=True, kw_only=True)
class ReplicationConfig:
    """The whole replication service configuration of one region (see ``dump_example_config()``)."""

    region: str = field(metadata=_meta(_region_name))
    organization_id: str = field(metadata=_meta(_nonempty))
    organization_name: str = ""
    regional_endpoint: str = field(metadata=_meta(_http_url))
    dst_endpoints: Mapping[str, str] = field(
        default_factory=dict, metadata=_meta(key_check=_region_name, value_check=_http_url)
    )
    mirrors_database: MirrorsDatabaseConfig = field(default_factory=MirrorsDatabaseConfig)
    blockstore: BlockstoreConfig | None = None
    blockstores: BlockstoresConfig | None = None
    auth: AuthConfig
    listen_address: str = field(default="0.0.0.0:8008", metadata=_meta(_listen_address))
    list_mirrors_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))
    list_repositories_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    commit_sensor: CommitSensorConfig = field(default_factory=CommitSensorConfig)
    mirrors_manager: MirrorsManagerConfig = field(default_factory=MirrorsManagerConfig)
    validator: ValidatorConfig = field(default_factory=ValidatorConfig)
    lakefs: LakeFSCredentials = field(default_factory=LakeFSCredentials)
    region_credentials: Mapping[str, LakeFSCredentials] = field(
        default_factory=dict, metadata=_meta(key_check=_region_name, region_keyed=True)
    )
    transfer: TransferConfig = field(default_factory=TransferConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    source_stores: Mapping[str, BlockstoreConfig] = field(
        default_factory=dict, metadata=_meta(key_check=_region_name, region_keyed=True)
    )

    # ---- validation across sections ------------------------------------------------------------------

    def _validate(self, parts: _Parts) -> None:
        if self.blockstore is not None and self.blockstores is not None:
            raise _FieldError(
                ("blockstores",),
                "blockstore and blockstores are mutually exclusive: keep blockstores (mark the store that "
                "was the single blockstore backward_compatible: true) or keep blockstore, not both",
            )
        if self.blockstore is None and self.blockstores is None:
            raise _FieldError(
                ("blockstore",),
                "required field is missing: configure blockstore (one store, as in lakeFS) "
                "or blockstores (several stores)",
            )
        known = self.known_regions
        for section in ("region_credentials", "source_stores"):
            for key in getattr(self, section):
                if key not in known:
                    raise _FieldError((section, key), f"unknown region{_suggest(key, known)}; {_known_text(known)}")
        for region, creds in self.region_credentials.items():
            if not creds.is_set:
                raise _FieldError(("region_credentials", region), "must set access_key_id and secret_access_key")
        missing = [r for r in known if not self.lakefs.is_set and r not in self.region_credentials]
        if missing:
            raise _FieldError(
                ("lakefs", "access_key_id"),
                "required field is missing: the replication user's lakeFS credentials "
                f"(or region_credentials for every region; none for {', '.join(missing)})",
            )

    # ---- helpers the engine uses ---------------------------------------------------------------------

    @property
    def known_regions(self) -> tuple[str, ...]:
        """This region first, then the other regions named in ``dst_endpoints`` (sorted)."""
        return (self.region, *sorted(r for r in self.dst_endpoints if r != self.region))

    def endpoint_for(self, region: str) -> str:
        """The lakeFS base URL of ``region``: ``regional_endpoint`` here, else from ``dst_endpoints``."""
        if region == self.region:
            return self.regional_endpoint
        try:
            return self.dst_endpoints[region]
        except KeyError:
            raise ConfigError(
                f"no lakeFS endpoint for region {region!r}{_suggest(region, self.known_regions)}; "
                f"{_known_text(self.known_regions)}",
                path="dst_endpoints",
            ) from None

    def credentials_for(self, region: str) -> tuple[str, str]:
        """``(access_key_id, secret_access_key)`` for ``region``'s lakeFS (revealed: for the client only)."""
        if region not in self.known_regions:
            raise ConfigError(
                f"no lakeFS credentials for unknown region {region!r}{_suggest(region, self.known_regions)}; "
                f"{_known_text(self.known_regions)}",
                path="region_credentials",
            )
        creds = self.region_credentials.get(region, self.lakefs)
        return creds.access_key_id, creds.secret_access_key.reveal()

    @property
    def stores(self) -> tuple[StoreConfig, ...]:
        """This region's stores; a single ``blockstore`` is one backward-compatible store with id ``""``."""
        if self.blockstores is not None:
            return self.blockstores.stores
        assert self.blockstore is not None  # guaranteed by _validate
        return (StoreConfig.from_blockstore(self.blockstore),)

    @property
    def default_store(self) -> StoreConfig | None:
        """The store of repositories without a storage id (the backward-compatible one), if any."""
        return next((s for s in self.stores if s.backward_compatible), None)

    def store_by_id(self, storage_id: str) -> StoreConfig:
        """The store a repository with ``storage_id`` lives on, resolved the way lakeFS resolves it.

        ``""`` (every open-source lakeFS repository, and those created before an upgrade to multi-storage)
        means the backward-compatible store; with none marked, this is the reference's "missing
        backward_compatible" case and raises. Call it for every repository at start-up to fail early.
        """
        if storage_id == "":
            store = self.default_store
            if store is None:
                raise ConfigError(
                    "no store is marked backward_compatible: true, so repositories without a storage id "
                    "(all repositories of open-source lakeFS, and those created before moving from "
                    "blockstore to blockstores) have no store; add backward_compatible: true to the store "
                    "that holds them",
                    path="blockstores.stores",
                )
            return store
        for store in self.stores:
            if store.id == storage_id:
                return store
        ids = [s.id for s in self.stores if s.id]
        if not ids:
            raise ConfigError(
                f'unknown storage id {storage_id!r}: this region has a single blockstore (storage id ""); '
                "use blockstores to configure stores with ids",
                path="blockstore",
            )
        raise ConfigError(
            f"unknown storage id {storage_id!r}{_suggest(storage_id, ids)}; configured store ids: {', '.join(ids)}",
            path="blockstores.stores",
        )

    def source_store_for(self, region: str) -> StoreConfig | None:
        """Direct read access to ``region``'s storage from ``source_stores``, else None (read via lakeFS)."""
        if region not in self.known_regions:
            raise ConfigError(
                f"unknown region {region!r}{_suggest(region, self.known_regions)}; {_known_text(self.known_regions)}",
                path="source_stores",
            )
        blockstore = self.source_stores.get(region)
        return None if blockstore is None else StoreConfig.from_blockstore(blockstore)

    def as_dict(self, *, reveal_secrets: bool = False) -> dict[str, Any]:
        """Plain YAML/JSON-ready data (durations as text); secrets are ``**********`` unless revealed.

        ``parse_config(config.as_dict(reveal_secrets=True))`` rebuilds an equal config.
        """
        data = _to_plain(self, reveal_secrets)
        assert isinstance(data, dict)
        return data


def _suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _known_text(regions: Iterable[str]) -> str:
    return "known regions: " + ", ".join(regions) + " (region and the keys of dst_endpoints)"


def _to_plain(value: Any, reveal: bool) -> Any:
    if isinstance(value, Secret):
        return value.reveal() if reveal else str(value)
    if isinstance(value, timedelta):
        return format_duration(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item is not None:
                out[f.name] = _to_plain(item, reveal)
        return out
    if isinstance(value, Mapping):
        return {k: _to_plain(v, reveal) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_to_plain(v, reveal) for v in value]
    return value


# --------------------------------------------------------------------------------------------------------
# Building the tree from raw data
# --------------------------------------------------------------------------------------------------------

_LAKEFS_ONLY = "a lakeFS server setting that the replication service does not use; remove it"
_KEY_HINTS: dict[tuple[str, str], str] = {
    ("ReplicationConfig", "replication"): (
        "this looks like Helm chart values: the config file holds only what is under replication.config"
    ),
    ("ReplicationConfig", "refstore_database"): (
        "not needed here: commit and range metadata are read from the source lakeFS and its storage, "
        "and mirror state lives in mirrors_database"
    ),
    (
        "ReplicationConfig",
        "database",
    ): "the lakeFS database is not used directly; did you mean 'mirrors_database'?",
    ("MirrorsDatabaseConfig", "dynamodb"): "only sqlite and postgres mirrors databases are supported",
    ("MirrorsDatabaseConfig", "cosmosdb"): "only sqlite and postgres mirrors databases are supported",
    ("BlockstoreConfig", "signing"): _LAKEFS_ONLY,
    ("BlockstoreConfig", "default_namespace_prefix"): _LAKEFS_ONLY,
    ("StoreConfig", "default_namespace_prefix"): _LAKEFS_ONLY,
    ("StoreConfig", "signing"): "signing belongs to blockstores, not to one store",
    **{
        ("S3Settings", key): _LAKEFS_ONLY
        for key in (
            "pre_signed_expiry",
            "pre_signed_endpoint",
            "disable_pre_signed",
            "disable_pre_signed_ui",
            "disable_pre_signed_multipart",
            "client_log_retries",
            "client_log_request",
            "web_identity",
        )
    },
    **{
        ("GSSettings", key): _LAKEFS_ONLY
        for key in (
            "pre_signed_expiry",
            "disable_pre_signed",
            "disable_pre_signed_ui",
            "server_side_encryption_customer_supplied",
            "data_credentials_file",
            "data_credentials_json",
        )
    },
    **{
        ("AzureSettings", key): _LAKEFS_ONLY
        for key in (
            "pre_signed_expiry",
            "disable_pre_signed",
            "disable_pre_signed_ui",
            "auth_method",
            "china_cloud",
        )
    },
    ("LocalSettings", "allowed_external_prefix"): "did you mean 'allowed_external_prefixes'?",
}
_VALUE_HINTS: dict[str, str] = {
    "minio": "MinIO speaks S3: use type s3 with s3.endpoint and s3.force_path_style: true",
    "mem": "lakeFS's in-memory test store cannot be shared with another process",
    "transient": "lakeFS's transient test store keeps no data",
    "dynamodb": "use postgres (one database shared by all regions) or sqlite (one host)",
    "cosmosdb": "use postgres (one database shared by all regions) or sqlite (one host)",
    "local": "use sqlite for a local mirrors database",
}
_LITERAL_ALIASES = {"WARNING": "WARN", "POSTGRESQL": "postgres"}
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


@cache
def _hints_of(cls: type) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


def _fields_of(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def _describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _unwrap_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _find_unknown_keys(tp: Any, raw: Any, parts: _Parts) -> None:
    """Report a misspelt key anywhere first: it is usually why a required field "is missing"."""
    tp = _unwrap_optional(tp)
    origin = get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(raw, Mapping):
        fields = _fields_of(tp)
        for key, value in raw.items():
            if isinstance(key, str) and key not in fields:
                raise _FieldError((*parts, key), _unknown_key_problem(tp, key, list(fields)))
            if isinstance(key, str):
                _find_unknown_keys(_hints_of(tp)[key], value, (*parts, key))
    elif origin in (Mapping, dict, typing.Mapping) and isinstance(raw, Mapping):
        for key, value in raw.items():
            if isinstance(key, str):
                _find_unknown_keys(get_args(tp)[1], value, (*parts, key))
    elif origin is tuple and isinstance(raw, list | tuple):
        for index, value in enumerate(raw):
            _find_unknown_keys(get_args(tp)[0], value, (*parts, index))


def _build(cls: type, raw: Any, parts: _Parts) -> Any:
    """Build dataclass ``cls`` from ``raw`` (a mapping), recursing through the type hints."""
    if isinstance(raw, cls):
        return raw
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise _FieldError(parts, f"expected a section with keys, got {_describe(raw)}")
    fields = _fields_of(cls)
    hints = _hints_of(cls)
    for key in raw:
        if not isinstance(key, str):
            raise _FieldError(parts, f"keys must be strings, got {_describe(key)}")
        if key not in fields:
            raise _FieldError((*parts, key), _unknown_key_problem(cls, key, list(fields)))
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        where = (*parts, name)
        tp = hints[name]
        value = raw.get(name)
        if value is None:
            if f.default is not dataclasses.MISSING:
                check = f.metadata.get("check")
                if check is not None:
                    kwargs[name] = check(f.default)  # defaults are normalised too (e.g. "~" expanded)
                continue
            inner = _unwrap_optional(tp)
            if isinstance(inner, type) and dataclasses.is_dataclass(inner):
                # An absent section is built from nothing: defaults get normalised, and a missing
                # required leaf is named by its full path rather than by the section.
                kwargs[name] = _build(inner, {}, where)
                continue
            if f.default_factory is not dataclasses.MISSING:
                continue
            raise _FieldError(where, "required field is missing")
        kwargs[name] = _convert(tp, value, where, f.metadata)
    obj = cls(**kwargs)
    validate = getattr(obj, "_validate", None)
    if validate is not None:
        validate(parts)
    return obj


def _unknown_key_problem(cls: type, key: str, valid: list[str]) -> str:
    hint = _KEY_HINTS.get((cls.__name__, key))
    if hint:
        return f"unknown key: {hint}"
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean {close[0]!r}?"
    return f"unknown key; valid keys here: {', '.join(valid)}"


def _convert(tp: Any, value: Any, parts: _Parts, meta: Mapping[str, Any]) -> Any:
    """Convert one raw value to ``tp`` and apply the field's checks; ValueErrors become field errors."""
    try:
        result = _convert_type(tp, value, parts, meta)
        check = meta.get("check")
        if check is not None:
            result = check(result)
    except _FieldError:
        raise
    except ValueError as exc:
        raise _FieldError(parts, str(exc)) from None
    return result


def _convert_type(tp: Any, value: Any, parts: _Parts, meta: Mapping[str, Any]) -> Any:
    origin = get_origin(tp)
    if origin is Annotated:
        base, *marks = get_args(tp)
        if _BYTE_SIZE in marks:
            return parse_byte_size(value)
        return _convert_type(base, value, parts, meta)
    if origin in (Union, types.UnionType):
        return _convert_type(_unwrap_optional(tp), value, parts, meta)
    if origin is Literal:
        return _literal(get_args(tp), value)
    if origin is tuple:
        item_tp = get_args(tp)[0]
        if isinstance(value, str) and item_tp is str:
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple):
            raise ValueError(f"expected a list, got {_describe(value)}")
        return tuple(_convert(item_tp, item, (*parts, i), {}) for i, item in enumerate(value))
    if origin in (Mapping, dict, typing.Mapping):
        return _mapping(get_args(tp)[1], value, parts, meta)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build(typing.cast(type, tp), value, parts)
    if tp is Secret:
        if isinstance(value, Secret):
            return value
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {_describe(value)}; quote the value in YAML")
        return Secret(value)
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {_describe(value)}; quote the value in YAML")
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError(f"expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return int(value)
        raise ValueError(f"expected a whole number, got {value!r}")
    if tp is timedelta:
        return parse_duration(value)
    raise TypeError(f"config schema uses an unsupported type {tp!r}")  # a bug in this module, not in input


def _literal(choices: tuple[Any, ...], value: Any) -> str:
    if isinstance(value, str):
        wanted = _LITERAL_ALIASES.get(value.strip().upper(), value.strip())
        for choice in choices:
            if choice.lower() == wanted.lower():
                return str(choice)
    shown = repr(value) if isinstance(value, str) else _describe(value)
    problem = f"unsupported value {shown}; expected one of: {', '.join(choices)}"
    if isinstance(value, str):
        hint = _VALUE_HINTS.get(value.strip().lower())
        close = difflib.get_close_matches(value.strip(), [str(c) for c in choices], n=1, cutoff=0.6)
        if hint:
            problem += f"; {hint}"
        elif close:
            problem += f"; did you mean {close[0]!r}?"
    raise ValueError(problem)


def _mapping(value_tp: Any, value: Any, parts: _Parts, meta: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of names to values, got {_describe(value)}")
    key_check = meta.get("key_check")
    value_check = meta.get("value_check")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise _FieldError(parts, f"keys must be strings, got {_describe(key)}")
        where = (*parts, key)
        if key_check is not None:
            try:
                key_check(key)
            except ValueError as exc:
                raise _FieldError(where, str(exc)) from None
        if meta.get("stringify") and isinstance(item, bool):
            item = str(item).lower()
        elif meta.get("stringify") and isinstance(item, int | float):
            item = str(item)
        if item is None and dataclasses.is_dataclass(value_tp):
            item = {}
        out[key] = _convert(value_tp, item, where, {"check": value_check})
    return out


# --------------------------------------------------------------------------------------------------------
# Environment overrides
# --------------------------------------------------------------------------------------------------------

# Kubernetes injects these for a Service named "replication"; they are not settings.
_K8S_SERVICE_LINK = re.compile(
    r"^REPLICATION_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$"
)


def _env_tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[^A-Za-z0-9]+", name.upper()) if t]


def _env_name(parts: _Parts) -> str:
    return ENV_PREFIX + "_".join("_".join(_env_tokens(str(p))) for p in parts)


@cache
def _all_env_names() -> tuple[str, ...]:
    """Every settable env var name, for did-you-mean suggestions (maps and lists stop at their own name)."""
    names: list[str] = []

    def walk(tp: Any, parts: _Parts) -> None:
        tp = _unwrap_optional(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            for name in _fields_of(tp):
                walk(_hints_of(tp)[name], (*parts, name))
        else:
            names.append(_env_name(parts))

    walk(ReplicationConfig, ())
    return tuple(names)


class _EnvContext:
    """What resolving one variable may consult: the data so far (for map keys and region names)."""

    def __init__(self, raw: dict[str, Any], var: str) -> None:
        self.raw = raw
        self.var = var

    def regions(self) -> list[str]:
        out = []
        region = self.raw.get("region")
        if isinstance(region, str):
            out.append(region)
        dst = self.raw.get("dst_endpoints")
        if isinstance(dst, Mapping):
            out.extend(k for k in dst if isinstance(k, str))
        return out


def _resolve_env(
    tp: Any, tokens: list[str], node: Any, parts: _Parts, meta: Mapping[str, Any], ctx: _EnvContext
) -> tuple[_Parts, Any, Mapping[str, Any]]:
    """Find the field path an env var's tokens name (longest field-name match first, backtracking)."""
    tp = _unwrap_optional(tp)
    if not tokens:
        return parts, tp, meta
    origin = get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        fields = _fields_of(tp)
        candidates = sorted(
            (name for name in fields if tokens[: len(_env_tokens(name))] == _env_tokens(name)),
            key=lambda n: -len(_env_tokens(n)),
        )
        first_error: _FieldError | None = None
        for name in candidates:
            child = node.get(name) if isinstance(node, Mapping) else None
            try:
                return _resolve_env(
                    _hints_of(tp)[name],
                    tokens[len(_env_tokens(name)) :],
                    child,
                    (*parts, name),
                    fields[name].metadata,
                    ctx,
                )
            except _FieldError as exc:
                first_error = first_error or exc
        if first_error is not None:
            raise first_error
        raise _unknown_env(parts, tokens, ctx)
    if origin in (Mapping, dict, typing.Mapping):
        keys = [k for k in node if isinstance(k, str)] if isinstance(node, Mapping) else []
        if meta.get("region_keyed"):
            keys += [r for r in ctx.regions() if r not in keys]
        matches = sorted(
            (k for k in keys if _env_tokens(k) and tokens[: len(_env_tokens(k))] == _env_tokens(k)),
            key=lambda k: -len(_env_tokens(k)),
        )
        if not matches:
            known = f"known keys: {', '.join(keys)}; " if keys else ""
            raise _FieldError(
                parts,
                f"cannot tell which key {'_'.join(tokens)!r} names (environment variable {ctx.var}); "
                f"{known}set {_env_name(parts)} to a JSON object instead",
            )
        key = matches[0]
        child = node.get(key) if isinstance(node, Mapping) else None
        value_tp = get_args(tp)[1]
        value_meta = {"check": meta.get("value_check"), "stringify": meta.get("stringify")}
        return _resolve_env(value_tp, tokens[len(_env_tokens(key)) :], child, (*parts, key), value_meta, ctx)
    if origin is tuple:
        length = len(node) if isinstance(node, list | tuple) else 0
        if not tokens[0].isdigit() or int(tokens[0]) >= length:
            raise _FieldError(
                parts,
                f"{ctx.var} names item {tokens[0]!r}, but only items 0..{length - 1} exist; "
                f"set {_env_name(parts)} to a JSON list instead",
            )
        index = int(tokens[0])
        return _resolve_env(get_args(tp)[0], tokens[1:], node[index], (*parts, index), {}, ctx)
    raise _unknown_env(parts, tokens, ctx)


def _unknown_env(parts: _Parts, tokens: list[str], ctx: _EnvContext) -> _FieldError:
    guess = (*parts, "_".join(tokens).lower())
    close = difflib.get_close_matches(ctx.var, _all_env_names(), n=1, cutoff=0.75)
    suggestion = f"; did you mean {close[0]}?" if close else ""
    return _FieldError(guess, f"unknown key (environment variable {ctx.var}){suggestion}")


def _env_value(tp: Any, text: str, parts: _Parts, meta: Mapping[str, Any], var: str) -> Any:
    """Env values are strings; structured targets take JSON (maps of strings also ``a=x,b=y``)."""
    tp = _unwrap_optional(tp)
    origin = get_origin(tp)
    structured = (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or origin in (
        Mapping,
        dict,
        typing.Mapping,
        tuple,
    )
    if not structured:
        return text
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise _FieldError(parts, f"invalid JSON in {var}: {exc.msg} at character {exc.pos}") from None
    if origin in (Mapping, dict, typing.Mapping) and get_args(tp)[1] is str:
        out: dict[str, str] = {}
        for item in stripped.split(","):
            if not item.strip():
                continue
            key, sep, val = item.partition("=")
            if not sep or not key.strip():
                raise _FieldError(parts, f"{var} must be JSON or name=value pairs separated by commas")
            out[key.strip()] = val.strip()
        return out
    if origin is tuple and get_args(tp)[0] is str:
        return [v.strip() for v in stripped.split(",") if v.strip()]
    raise _FieldError(parts, f"{var} must hold JSON for this section")


def _set_raw(raw: dict[str, Any], parts: _Parts, value: Any) -> None:
    node: Any = raw
    for part, following in itertools.pairwise(parts):
        if isinstance(part, int):
            node = node[part]  # the index was checked against this list by _resolve_env
            continue
        child = node.get(part)
        if isinstance(following, int) and isinstance(child, list):
            node = child
            continue
        if not isinstance(child, dict):
            child = dict(child) if isinstance(child, Mapping) else {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _apply_env(raw: dict[str, Any], env: Mapping[str, str]) -> dict[_Parts, str]:
    """Overlay ``REPLICATION_*`` variables onto ``raw``; returns which variable set which path."""
    origins: dict[_Parts, str] = {}
    names = sorted(
        (n for n in env if n.upper().startswith(ENV_PREFIX) and n.upper() != CONFIG_PATH_ENV),
        key=lambda n: (len(n), n),
    )  # shorter first: a whole map from JSON, then per-key variables on top of it
    for var in names:
        text = env[var]
        if text == "" or _K8S_SERVICE_LINK.match(var.upper()):
            continue
        tokens = _env_tokens(var[len(ENV_PREFIX) :])
        if not tokens:
            continue
        ctx = _EnvContext(raw, var)
        parts, tp, meta = _resolve_env(ReplicationConfig, tokens, raw, (), {}, ctx)
        _set_raw(raw, parts, _env_value(tp, text, parts, meta, var))
        origins[parts] = var
    return origins


# --------------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML would silently keep the last one)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, typing.Hashable) and key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark)
        seen.add(key)
    loader.flatten_mapping(node)
    return dict(loader.construct_pairs(node, deep=deep))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file is a directory: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"config file {path} is not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {_describe(data)}")
    return data


def parse_config(
    data: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    source: str = "",
) -> ReplicationConfig:
    """Build a config from already-parsed data plus ``env`` overrides (none unless given).

    ``source`` names where ``data`` came from in error messages (e.g. the file name).
    """
    raw: dict[str, Any] = _deep_copy(data) if data else {}
    origins: dict[_Parts, str] = {}
    try:
        if env:
            origins = _apply_env(raw, env)
        _find_unknown_keys(ReplicationConfig, raw, ())
        config = _build(ReplicationConfig, raw, ())
    except _FieldError as exc:
        raise ConfigError(exc.problem, path=exc.path, origin=_origin_of(exc, origins, source)) from None
    assert isinstance(config, ReplicationConfig)
    return config


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _origin_of(exc: _FieldError, origins: Mapping[_Parts, str], source: str) -> str:
    for length in range(len(exc.parts), 0, -1):
        var = origins.get(exc.parts[:length])
        if var is not None:
            return f"from environment variable {var}"
    if "environment variable" in exc.problem:
        return ""
    if exc.problem.startswith("required field is missing") and _is_scalar_path(exc.parts):
        where = f"in {source} " if source else "in the config file "
        return f"set it {where}or with environment variable {_env_name(exc.parts)}"
    return f"in {source}" if source else ""


def _is_scalar_path(parts: _Parts) -> bool:
    """Whether ``parts`` names a plain value (so one environment variable can set it)."""
    tp: Any = ReplicationConfig
    for part in parts:
        tp = _unwrap_optional(tp)
        if not (isinstance(part, str) and isinstance(tp, type) and dataclasses.is_dataclass(tp)):
            return False
        if part not in _fields_of(tp):
            return False
        tp = _hints_of(tp)[part]
    tp = _unwrap_optional(tp)
    return (
        bool(parts)
        and not (isinstance(tp, type) and dataclasses.is_dataclass(tp))
        and get_origin(tp)
        not in (
            Mapping,
            dict,
            typing.Mapping,
            tuple,
        )
    )


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> ReplicationConfig:
    """Read the YAML config at ``path`` and apply ``REPLICATION_*`` overrides from ``env`` (``os.environ``).

    Variable names are ``REPLICATION_`` plus the field path upper-cased with dots as underscores
    (``REPLICATION_COMMIT_SENSOR_PROCESS_BRANCHES_DURATION``); maps and lists take JSON (maps of strings
    also ``a=x,b=y``), or one entry per variable when the key is known
    (``REPLICATION_DST_ENDPOINTS_US_WEST_2``).
    Empty variables are ignored. With ``path`` None the file named by ``REPLICATION_CONFIG`` is read if set,
    else the config comes from the environment alone. Raises ``ConfigError`` naming the field.
    """
    env = os.environ if env is None else env
    if path is None and env.get(CONFIG_PATH_ENV):
        path = env[CONFIG_PATH_ENV]
    data: dict[str, Any] = {}
    source = ""
    if path is not None:
        file = Path(path).expanduser()
        data = _read_yaml(file)
        source = f"config file {file}"
    return parse_config(data, env=env, source=source)


# --------------------------------------------------------------------------------------------------------
# Example
# --------------------------------------------------------------------------------------------------------

_EXAMPLE = """\
# lakefs-mirror-dagster replication config (one file per region).
# Every key can also be set from the environment: REPLICATION_ + the key path upper-cased with dots as
# underscores, e.g. REPLICATION_AUTH_ENCRYPT_SECRET_KEY, REPLICATION_COMMIT_SENSOR_PROCESS_BRANCHES_DURATION.
# Maps and lists take JSON (maps of strings also "a=x,b=y"). Durations: 500ms, 20s, 1m, 1h30m.

# Required: this installation's region, the organization shared by all regions, and this region's lakeFS.
region: us-east-1
organization_id: my-org
organization_name: ""                 # lakeFS Cloud only; unused when regional_endpoint is set
regional_endpoint: http://lakefs.default.svc.cluster.local:80

# lakeFS endpoints of the other regions (region -> base URL). Listing this region too is allowed.
dst_endpoints:
  us-west-2: https://lakefs-west.example.com

# Mirror definitions and validation caches. Regions that mirror to each other must share one
# PostgreSQL database; sqlite suits a single host.
mirrors_database:
  type: sqlite                        # sqlite | postgres
  sqlite:
    path: ~/.lakefs-mirror/mirrors.db
  # postgres:
  #   connection_string: postgres://replication:password@db.example.com:5432/mirrors?sslmode=require

# This region's storage; must match the lakeFS blockstore config. Types: s3 | local | gs | azure.
blockstore:
  type: s3
  s3:
    region: us-east-1
    endpoint: ""                      # set for MinIO and other S3-compatible stores
    force_path_style: false           # true for MinIO
    discover_bucket_region: true
    profile: ""
    credentials_file: ""
    credentials:                      # leave empty to use the AWS default credential chain
      access_key_id: ""
      secret_access_key: ""
      session_token: ""
    max_retries: 5
    skip_verify_certificate_test_only: false
    server_side_encryption: ""        # "" | AES256 | aws:kms | aws:kms:dsse
    server_side_encryption_kms_key_id: ""
  local:
    path: ~/lakefs/data/block         # used when type is local
  gs:                                 # used when type is gs
    endpoint: ""                      # an emulator (fake-gcs-server) or private endpoint; anonymous without credentials
    credentials_file: ""
    credentials_json: ""              # a service account key, as JSON text
  azure:                              # used when type is azure
    storage_account: ""
    storage_access_key: ""
    domain: blob.core.windows.net
    test_endpoint_url: ""             # an emulator, e.g. Azurite at http://127.0.0.1:10000

# Or, instead of blockstore (never both), several stores as in lakeFS's multi-storage setup.
# Exactly one store may be backward_compatible: true; repositories without a storage id (all repositories
# of open-source lakeFS, and those created before the upgrade) live on it.
# blockstores:
#   signing:
#     secret_key: some-secret
#   stores:
#     - id: minio-prod
#       description: Primary on-prem MinIO storage
#       type: s3
#       backward_compatible: true
#       s3:
#         endpoint: http://minio-prod.local
#         force_path_style: true
#         credentials:
#           access_key_id: prod_access_key
#           secret_access_key: prod_secret_key
#     - id: archive
#       type: local
#       local:
#         path: /mnt/archive

auth:
  encrypt:
    secret_key: "<same-secret-key-as-lakefs>"   # required; must match lakeFS's auth.encrypt.secret_key
  api:
    endpoint: ""                      # external auth service; empty uses lakeFS's own auth
  cache:
    enabled: false
    size: 1024
    ttl: 20s

# The replication user's lakeFS credentials, identical on every installation (per the reference).
lakefs:
  access_key_id: "<ACCESS_KEY_ID>"
  secret_access_key: "<SECRET_ACCESS_KEY>"
# Per-region overrides, where an installation cannot use the shared credentials:
# region_credentials:
#   us-west-2:
#     access_key_id: "<WEST_ACCESS_KEY_ID>"
#     secret_access_key: "<WEST_SECRET_ACCESS_KEY>"

listen_address: 0.0.0.0:8008
list_mirrors_page_size: 1000
list_repositories_page_size: 1000

logging:
  level: INFO                         # DEBUG | INFO | WARN | ERROR
  format: text                        # text | json

commit_sensor:
  process_branches_duration: 1m
  branches_scanner_concurrency_limit: 10
  list_branch_page_size: 1000
  log_commit_page_size: 1000

mirrors_manager:
  process_mirrors_interval_duration: 20s

validator:
  run_interval: 1m
  num_workers: 3
  cooldown_on_missing: 1m
  cooldown_on_error: 1m

transfer:
  mode: copy                          # copy: this service copies; external: object-store replication does
  concurrency: 16
  multipart_threshold: 64MiB
  multipart_chunk_size: 16MiB         # S3 parts: 5MiB .. 5GiB
  strict_full_addresses: false

spark:
  master: local[*]
  conf: {}                            # e.g. spark.executor.memory: 4g
  transfer_enabled: false             # copy objects in Spark tasks (Dagster; the CLI: sync --spark)
  transfer_threshold_objects: 6000    # fewer objects in a metarange's new ranges: copy in-process
  transfer_max_partitions: 8          # Spark partitions the new ranges of a metarange spread over
  validation_threshold_ranges: 16     # fewer new ranges: validate in-process (a Spark session takes ~30 s to start)

# Direct read access to other regions' storage (same shape as blockstore). Without an entry the source
# objects are read through that region's lakeFS API.
# source_stores:
#   us-west-2:
#     type: s3
#     s3:
#       region: us-west-2
"""


def dump_example_config() -> str:
    """A commented example YAML with every setting at its default (placeholders for the required ones)."""
    return _EXAMPLE
