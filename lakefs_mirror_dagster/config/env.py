"""``REPLICATION_*`` environment variables laid over the data read from the file.

A variable's name is ``REPLICATION_`` plus the field path upper-cased with dots as underscores; map keys
(regions, store ids) are matched against the keys known so far, longest field name first, backtracking.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import re
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, get_args, get_origin

from .binder import _fields_of, _hints_of, _unwrap_optional
from .errors import _FieldError, _Parts
from .model import ReplicationConfig

__all__ = ["CONFIG_PATH_ENV", "ENV_PREFIX", "REFERENCE_SECRET_NAMES"]

ENV_PREFIX = "REPLICATION_"
#: Names the config file when ``load_config`` gets no path (read by the loader, never a setting itself).
CONFIG_PATH_ENV = "REPLICATION_CONFIG"

#: The reference's secret names (the keys of its Kubernetes secret, which ``extraEnvVarsSecret`` turns into
#: environment variables of exactly these names) and the ``REPLICATION_*`` variable each stands for.
#: A ``REPLICATION_*`` variable for the same field wins.
REFERENCE_SECRET_NAMES = {
    "source_lakefs_access_key_id": "REPLICATION_LAKEFS_ACCESS_KEY_ID",
    "source_lakefs_secret_access_key": "REPLICATION_LAKEFS_SECRET_ACCESS_KEY",
    "auth_encrypt_secret_key": "REPLICATION_AUTH_ENCRYPT_SECRET_KEY",
}

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


def _reference_secret_vars(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, ``REPLICATION_*`` name it stands for) for the reference's secret names present in ``env``."""
    found = []
    for name, target in REFERENCE_SECRET_NAMES.items():
        for var in (name, name.upper()):
            if env.get(var):
                found.append((var, target))
                break
    return found


def _apply_env(raw: dict[str, Any], env: Mapping[str, str]) -> dict[_Parts, str]:
    """Overlay the reference's secret names, then ``REPLICATION_*`` variables (which win), onto ``raw``;
    returns which variable set which path."""
    origins: dict[_Parts, str] = {}
    names = sorted(
        (n for n in env if n.upper().startswith(ENV_PREFIX) and n.upper() != CONFIG_PATH_ENV),
        key=lambda n: (len(n), n),
    )  # shorter first: a whole map from JSON, then per-key variables on top of it
    for var, as_name in [*_reference_secret_vars(env), *((n, n) for n in names)]:
        text = env[var]
        if text == "" or _K8S_SERVICE_LINK.match(var.upper()):
            continue
        tokens = _env_tokens(as_name[len(ENV_PREFIX) :])
        if not tokens:
            continue
        ctx = _EnvContext(raw, var)
        parts, tp, meta = _resolve_env(ReplicationConfig, tokens, raw, (), {}, ctx)
        _set_raw(raw, parts, _env_value(tp, text, parts, meta, var))
        origins[parts] = var
    return origins
