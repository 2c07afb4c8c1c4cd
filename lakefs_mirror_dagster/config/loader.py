"""Loading: the YAML file (duplicate keys refused), ``REPLICATION_*`` overrides, and the dataclasses built
from both, with every error naming the field and where its value came from."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import typing
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, get_origin

import yaml

from .binder import _build, _describe, _fields_of, _find_unknown_keys, _hints_of, _unwrap_optional
from .env import CONFIG_PATH_ENV, _apply_env, _env_name
from .errors import ConfigError, _FieldError, _Parts
from .model import ReplicationConfig
from .stores import BlockstoreConfig, StoreConfig

__all__ = ["dump_example_config", "load_config", "parse_config", "parse_store"]

log = logging.getLogger(__name__)

#: lakeFS Cloud's address of an organisation's installation in a region; ``organization_name`` exists only to
#: build it (the reference: "only used to auto-construct regional_endpoint for lakeFS Cloud").
CLOUD_ENDPOINT = "https://{organization_name}.{region}.lakefscloud.io"
_DNS_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def _cloud_regional_endpoint(raw: dict[str, Any]) -> None:
    """``regional_endpoint`` built from ``organization_name`` when only the latter is set; both set is refused,
    since the name would then do nothing."""
    name = raw.get("organization_name")
    if name in (None, ""):
        return
    if not isinstance(name, str) or not _DNS_LABEL.fullmatch(name):
        raise _FieldError(
            ("organization_name",), f"must be a lakeFS Cloud organisation name (a DNS label), got {name!r}"
        )
    if raw.get("regional_endpoint"):
        raise _FieldError(
            ("organization_name",),
            "only builds a lakeFS Cloud regional_endpoint (" + CLOUD_ENDPOINT + "), and regional_endpoint is "
            "set; remove one of them",
        )
    region = raw.get("region")
    if isinstance(region, str) and region:
        raw["regional_endpoint"] = CLOUD_ENDPOINT.format(organization_name=name, region=region)


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
        _cloud_regional_endpoint(raw)
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


def parse_store(data: Mapping[str, Any]) -> StoreConfig:
    """One store from lakeFS-shaped settings: a ``blockstores.stores`` entry, or a ``blockstore`` section
    (no ``id``: the backward-compatible store ``""``), checked exactly as in a config file.

    For settings that do not come from a config file (the dev environment's regions, tests). Raises
    ``ConfigError`` naming the field, e.g. ``s3.endpoint``.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"store settings must be a mapping, not {_describe(data)}")
    raw = _deep_copy(data)
    cls: type[BlockstoreConfig] = StoreConfig if "id" in raw else BlockstoreConfig
    try:
        _find_unknown_keys(cls, raw, ())
        store = _build(cls, raw, ())
    except _FieldError as exc:
        raise ConfigError(exc.problem, path=exc.path) from None
    return store if isinstance(store, StoreConfig) else StoreConfig.from_blockstore(store)


def dump_example_config() -> str:
    """A commented example YAML with every setting at its default (placeholders for the required ones)."""
    return resources.files(__package__).joinpath("example.yaml").read_text(encoding="utf-8")
