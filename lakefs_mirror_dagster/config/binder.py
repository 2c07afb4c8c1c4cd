"""From raw YAML/JSON data to the frozen dataclasses, walking their type hints.

The schema's dataclasses are the single source of truth for keys, types and defaults; this module converts
each value to its field's type, applies the field's checks, and refuses with a ``_FieldError`` that carries
the exact path (a misspelt key anywhere is reported first, with the key that was probably meant).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import types
import typing
from collections.abc import Mapping
from datetime import timedelta
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from .errors import _FieldError, _Parts
from .values import (
    _BYTE_RATE,
    _BYTE_SIZE,
    _CONCURRENCY,
    Secret,
    parse_byte_rate,
    parse_byte_size,
    parse_concurrency,
    parse_duration,
)

__all__: list[str] = []

_LAKEFS_ONLY = "a lakeFS server setting that the replication service does not use; remove it"
_KEY_HINTS: dict[tuple[str, str], str] = {
    ("ReplicationConfig", "replication"): (
        "this looks like Helm chart values: the config file holds only what is under replication.config"
    ),
    (
        "ReplicationConfig",
        "database",
    ): "the lakeFS database is not used directly; did you mean 'mirrors_database'?",
    **{
        ("RefstoreDatabaseConfig", key): (
            "commit records are written only into a PostgreSQL or DynamoDB lakeFS database; a "
            f"{key} lakeFS database cannot be written from outside lakeFS: remove refstore_database"
        )
        for key in ("local", "mem", "cosmosdb")
    },
    ("MirrorsDatabaseConfig", "cosmosdb"): "only sqlite, postgres and dynamodb mirrors databases are supported",
    **{
        ("DynamoDBSettings", key): _LAKEFS_ONLY
        for key in ("scan_limit", "health_check_interval", "max_attempts", "max_connections")
    },
    ("BlockstoreConfig", "signing"): _LAKEFS_ONLY,
    ("BlockstoreConfig", "default_namespace_prefix"): _LAKEFS_ONLY,
    ("StoreConfig", "default_namespace_prefix"): _LAKEFS_ONLY,
    ("StoreConfig", "signing"): "signing belongs to blockstores, not to one store",
    ("BlockstoresConfig", "signing"): (
        "lakeFS signs the physical addresses it hands out with it; the replication service writes objects "
        "straight to the store and links none through lakeFS, so it would do nothing here; remove it"
    ),
    ("S3Settings", "discover_bucket_region"): (
        "the replication service signs requests for s3.region and does not look up each bucket's region; "
        "set region to the buckets' region and remove this key"
    ),
    **{
        ("LocalSettings", key): (
            "a lakeFS setting for importing local paths, which the replication service never does (it reads "
            "imported objects by their addresses, within allowed_external_prefixes); remove it"
        )
        for key in ("import_enabled", "import_hidden")
    },
    ("GSSettings", "s3_endpoint"): (
        "lakeFS's S3-interoperability endpoint for GCS; the replication service uses GCS's own API "
        "(gs.endpoint for an emulator or a private endpoint); remove it"
    ),
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
    "cosmosdb": "use postgres or dynamodb (one database shared by all regions) or sqlite (one host)",
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
        if _BYTE_RATE in marks:
            return parse_byte_rate(value)
        if _CONCURRENCY in marks:
            return parse_concurrency(value)
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
