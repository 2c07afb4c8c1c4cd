"""Blockstores by id, built from settings shaped like lakeFS's ``blockstores.stores`` entries.

A settings entry is a mapping (or dataclass / object with attributes) such as::

    {"id": "minio-prod", "type": "s3",
     "s3": {"endpoint": "http://127.0.0.1:9000", "force_path_style": True, "region": "us-east-1",
            "credentials": {"access_key_id": "...", "secret_access_key": "..."},
            "multipart_threshold": "64MiB", "multipart_chunk_size": "16MiB", "buckets": ["data"]}}
    {"id": "disk", "type": "local", "local": {"path": "/var/lib/lakefs/block"}}
    {"id": "gcs", "type": "gs", "gs": {"credentials_json": "{...service account key...}"}}
    {"id": "emu", "type": "gs", "gs": {"endpoint": "http://127.0.0.1:4443"}}   # emulator: anonymous
    {"id": "blob", "type": "azure", "azure": {"storage_account": "acct", "storage_access_key": "...",
                                              "test_endpoint_url": "http://127.0.0.1:10000"}}

The replication config's frozen dataclasses (``StoreConfig`` with ``Secret``-wrapped credentials) work as
well: wrapped secrets are unwrapped with ``reveal()``/``get_secret_value()``, lakeFS's ``max_retries``
becomes botocore's total attempts (+1), ``profile``, ``credentials_file``,
``skip_verify_certificate_test_only`` and ``server_side_encryption[_kms_key_id]`` are honoured, and
``local.allowed_external_prefixes`` is passed on. For ``gs``: ``credentials_json`` or ``credentials_file``
(else anonymous with ``endpoint``, else application default credentials), ``endpoint`` (an emulator or
private endpoint; ``STORAGE_EMULATOR_HOST`` also works), ``project`` and
``server_side_encryption_kms_key_id``. For ``azure``: ``storage_account``, ``storage_access_key``, ``domain``,
``test_endpoint_url`` (alias ``endpoint``) and ``try_timeout``. Other keys (e.g. ``discover_bucket_region``) are
ignored. ``s3.buckets`` is optional and only helps ``store_for_uri`` pick among several S3 stores.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .base import Blockstore
from .errors import StorageConfigError, UnsupportedStorageError
from .local import LocalBlockstore
from .s3 import DEFAULT_MULTIPART_CHUNK_SIZE, DEFAULT_MULTIPART_THRESHOLD, S3Blockstore
from .uri import parse_uri

if TYPE_CHECKING:  # the cloud SDKs take most of a second to import: only stores of those types load them
    from .azure import AzureBlockstore
    from .gcs import GCSBlockstore

__all__ = ["StoreRegistry", "build_blockstore", "parse_size"]

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4}
_NOT_YET = {
    "mem": "in-memory",
    "transient": "transient",
}


_EXPECTED_TYPES = "'s3', 'local', 'gs' or 'azure'"


def parse_size(value: int | str, *, what: str = "size") -> int:
    """``8388608``, ``"8MiB"``, ``"8 MB"`` -> bytes (``KiB`` etc. are binary, ``KB`` decimal)."""
    if isinstance(value, bool):
        raise StorageConfigError(f"{what}: expected a byte size, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise StorageConfigError(f"{what}: must not be negative, got {value}")
        return value
    match = _SIZE_RE.match(str(value))
    if not match:
        raise StorageConfigError(f"{what}: {value!r} is not a byte size (examples: 8388608, '8MiB', '64MB')")
    number, unit = int(match.group(1)), (match.group(2) or "").lower()
    if "i" in unit:
        return number * 1024 ** "kmgt".index(unit[0]) * 1024
    return number * _UNITS[unit.rstrip("b") or ""]


def _as_mapping(obj: Any, what: str) -> dict[str, Any]:
    """Accept plain dicts, dataclasses, pydantic-style models or simple objects."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dict(dump())
    if hasattr(obj, "__dict__"):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    raise StorageConfigError(f"{what}: expected a mapping of settings, got {type(obj).__name__}")


def _reveal(value: Any) -> str | None:
    """Plain text of a credential that may be wrapped (config ``Secret``, pydantic ``SecretStr``)."""
    if value is None:
        return None
    for method in ("reveal", "get_secret_value"):
        getter = getattr(value, method, None)
        if callable(getter):
            value = getter()
            break
    return str(value) or None


def _build_s3(store_id: str, s3: dict[str, Any], overrides: Mapping[str, Any]) -> S3Blockstore:
    creds = _as_mapping(s3.get("credentials"), f"store {store_id!r} s3.credentials")

    def pick(key: str) -> str | None:
        return _reveal(creds.get(key)) or _reveal(s3.get(key))

    def size(key: str, default: int) -> int:
        value = overrides.get(key) or s3.get(key) or default
        return parse_size(value, what=f"store {store_id!r} s3.{key}")

    kwargs: dict[str, Any] = {}
    for key in ("max_attempts", "max_pool_connections", "connect_timeout", "read_timeout"):
        value = overrides.get(key, s3.get(key))
        if value is not None:
            kwargs[key] = value
    if "max_attempts" not in kwargs and s3.get("max_retries") is not None:
        kwargs["max_attempts"] = int(s3["max_retries"]) + 1  # lakeFS counts retries, botocore attempts
    try:
        return S3Blockstore(
            endpoint=s3.get("endpoint") or None,
            region=s3.get("region") or None,
            access_key_id=pick("access_key_id"),
            secret_access_key=pick("secret_access_key"),
            session_token=pick("session_token"),
            force_path_style=bool(s3.get("force_path_style", True)),
            multipart_threshold=size("multipart_threshold", DEFAULT_MULTIPART_THRESHOLD),
            multipart_chunk_size=size("multipart_chunk_size", DEFAULT_MULTIPART_CHUNK_SIZE),
            profile=s3.get("profile") or None,
            credentials_file=s3.get("credentials_file") or None,
            verify_tls=not s3.get("skip_verify_certificate_test_only", False),
            server_side_encryption=s3.get("server_side_encryption") or None,
            sse_kms_key_id=s3.get("server_side_encryption_kms_key_id") or None,
            **kwargs,
        )
    except StorageConfigError as exc:
        raise StorageConfigError(f"store {store_id!r}: {exc}") from exc


def _sizes(store_id: str, section: str, values: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, int]:
    """``multipart_threshold``/``multipart_chunk_size`` for gs and azure: transfer overrides, then the section."""
    out: dict[str, int] = {}
    for key in ("multipart_threshold", "multipart_chunk_size"):
        value = overrides.get(key) or values.get(key)
        if value:
            out[key] = parse_size(value, what=f"store {store_id!r} {section}.{key}")
    return out


def _timeout_seconds(store_id: str, value: Any) -> float | None:
    """lakeFS's ``azure.try_timeout`` (a timedelta from our config, or Go-style text such as ``"10m"``)."""
    if value is None or value == "":
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    from ..config import parse_duration  # the config's parser; imported late to keep storage free of config

    try:
        return parse_duration(str(value)).total_seconds()
    except ValueError as exc:
        raise StorageConfigError(f"store {store_id!r}: azure.try_timeout: {exc}") from None


def _build_gs(store_id: str, gs: dict[str, Any], overrides: Mapping[str, Any]) -> GCSBlockstore:
    from .gcs import GCSBlockstore

    try:
        return GCSBlockstore(
            endpoint=gs.get("endpoint") or None,
            credentials_json=_reveal(gs.get("credentials_json")),
            credentials_file=os.path.expanduser(str(gs["credentials_file"])) if gs.get("credentials_file") else None,
            project=gs.get("project") or None,
            kms_key_name=gs.get("server_side_encryption_kms_key_id") or None,
            **_sizes(store_id, "gs", gs, overrides),
        )
    except StorageConfigError as exc:
        raise StorageConfigError(f"store {store_id!r}: {exc}") from exc


def _build_azure(store_id: str, azure: dict[str, Any], overrides: Mapping[str, Any]) -> AzureBlockstore:
    from .azure import DEFAULT_AZURE_DOMAIN, AzureBlockstore

    endpoint = azure.get("test_endpoint_url") or azure.get("endpoint") or None
    timeout = _timeout_seconds(store_id, azure.get("try_timeout"))
    extra: dict[str, Any] = dict(_sizes(store_id, "azure", azure, overrides))
    if timeout:
        extra["timeout_s"] = timeout
    try:
        return AzureBlockstore(
            storage_account=str(azure.get("storage_account") or ""),
            storage_access_key=_reveal(azure.get("storage_access_key")) or "",
            domain=str(azure.get("domain") or "") or DEFAULT_AZURE_DOMAIN,
            endpoint=endpoint,
            **extra,
        )
    except StorageConfigError as exc:
        raise StorageConfigError(f"store {store_id!r}: {exc}") from exc


def build_blockstore(settings: Any, **s3_overrides: Any) -> Blockstore:
    """One blockstore from one settings entry; unsupported types fail with a clear message.

    ``s3_overrides`` (``multipart_threshold``, ``multipart_chunk_size``, ``max_pool_connections``, ...)
    come from the replication config's ``transfer`` section and win over per-store values; the two
    multipart sizes apply to gs and azure stores too.
    """
    entry = _as_mapping(settings, "blockstore settings")
    store_id = str(entry.get("id") or "")
    store_type = str(entry.get("type") or "").lower()
    if not store_type:
        raise StorageConfigError(f"store {store_id!r}: 'type' is missing (expected {_EXPECTED_TYPES})")
    overrides = {k: v for k, v in s3_overrides.items() if v is not None}
    if store_type == "gs":
        return _build_gs(store_id, _as_mapping(entry.get("gs"), f"store {store_id!r} gs"), overrides)
    if store_type == "azure":
        return _build_azure(store_id, _as_mapping(entry.get("azure"), f"store {store_id!r} azure"), overrides)
    if store_type == "s3":
        return _build_s3(store_id, _as_mapping(entry.get("s3"), f"store {store_id!r} s3"), overrides)
    if store_type == "local":
        local = _as_mapping(entry.get("local"), f"store {store_id!r} local")
        path = local.get("path")
        if not path:
            raise StorageConfigError(f"store {store_id!r}: local.path (the root directory) is required")
        prefixes = local.get("allowed_external_prefixes") or ()
        return LocalBlockstore(
            root=os.fspath(path),
            allowed_external_prefixes=[prefixes] if isinstance(prefixes, str) else list(prefixes),
        )
    if store_type in _NOT_YET:
        raise UnsupportedStorageError(f"store {store_id!r}: type {store_type} is not supported yet")
    raise StorageConfigError(f"store {store_id!r}: unknown type {store_type!r} (expected {_EXPECTED_TYPES})")


class StoreRegistry:
    """Blockstores by id, and the lookup of the store that serves a given URI."""

    def __init__(self) -> None:
        self._stores: dict[str, Blockstore] = {}
        self._buckets: dict[str, frozenset[str]] = {}

    @classmethod
    def from_settings(cls, stores: Iterable[Any], **s3_overrides: Any) -> StoreRegistry:
        """Build every store of a ``blockstores.stores``-like list; ids must be unique.

        ``s3_overrides`` are passed to every S3 store (see ``build_blockstore``).
        """
        registry = cls()
        for settings in stores:
            entry = _as_mapping(settings, "blockstore settings")
            s3 = _as_mapping(entry.get("s3"), "s3 settings")
            buckets = s3.get("buckets") or ()
            if isinstance(buckets, str):
                buckets = [buckets]
            registry.register(str(entry.get("id") or ""), build_blockstore(entry, **s3_overrides), buckets=buckets)
        return registry

    def register(self, store_id: str, store: Blockstore, *, buckets: Iterable[str] = ()) -> None:
        """Add a store; ``buckets`` (S3 only) lets ``store_for_uri`` route by bucket."""
        if store_id in self._stores:
            raise StorageConfigError(f"duplicate blockstore id {store_id!r}")
        self._stores[store_id] = store
        self._buckets[store_id] = frozenset(buckets)

    @property
    def ids(self) -> list[str]:
        return list(self._stores)

    def __contains__(self, store_id: object) -> bool:
        return store_id in self._stores

    def __iter__(self) -> Iterator[str]:
        return iter(self._stores)

    def __len__(self) -> int:
        return len(self._stores)

    def get(self, store_id: str) -> Blockstore:
        try:
            return self._stores[store_id]
        except KeyError:
            known = ", ".join(repr(i) for i in self._stores) or "none"
            raise StorageConfigError(f"unknown blockstore id {store_id!r} (configured: {known})") from None

    def store_for_uri(self, uri: str, storage_id: str | None = None) -> Blockstore:
        """The store for ``uri``: by ``storage_id`` when the repository names one (lakeFS OSS reports
        ``""``, meaning none), else by scheme, then by S3 bucket or by local root."""
        parsed = parse_uri(uri)
        if storage_id:
            store = self.get(storage_id)
            if parsed.scheme not in store.schemes:
                raise StorageConfigError(
                    f"{uri}: blockstore {storage_id!r} ({store.describe()}) does not serve {parsed.scheme}:// URIs"
                )
            if not _serves(store, uri):
                raise StorageConfigError(f"{uri}: blockstore {storage_id!r} ({store.describe()}) does not serve it")
            return store
        candidates = [i for i, s in self._stores.items() if parsed.scheme in s.schemes]
        if not candidates:
            if parsed.scheme in _NOT_YET:
                raise UnsupportedStorageError(f"{uri}: type {parsed.scheme} is not supported yet")
            raise StorageConfigError(f"{uri}: no blockstore configured for {parsed.scheme}:// URIs")
        # stores that can tell which URIs are theirs (an azure account) narrow the choice
        serving = [i for i in candidates if _serves(self._stores[i], uri)]
        if not serving:
            known = ", ".join(f"{i!r} ({self._stores[i].describe()})" for i in candidates)
            raise StorageConfigError(f"{uri}: none of the {parsed.scheme}:// blockstores serves it: {known}")
        candidates = serving
        if len(candidates) > 1 and parsed.scheme == "s3":
            by_bucket = [i for i in candidates if parsed.bucket in self._buckets[i]]
            if not by_bucket:
                by_bucket = [i for i in candidates if not self._buckets[i]]
            candidates = by_bucket or candidates
        if len(candidates) > 1 and parsed.is_local_absolute:
            path = "/" + parsed.key
            roots = {
                i: s.root
                for i in candidates
                if isinstance(s := self._stores[i], LocalBlockstore) and path.startswith(s.root.rstrip("/") + "/")
            }
            if roots:
                candidates = [max(roots, key=lambda i: len(roots[i]))]
        if len(candidates) > 1:
            raise StorageConfigError(
                f"{uri}: several blockstores could serve it ({', '.join(map(repr, candidates))}); "
                "name the storage id explicitly"
                + (" or list buckets under s3.buckets" if parsed.scheme == "s3" else "")
            )
        return self._stores[candidates[0]]


def _serves(store: Blockstore, uri: str) -> bool:
    """Ask a store that knows (``serves_uri``) whether ``uri`` is its; others serve their whole scheme."""
    check = getattr(store, "serves_uri", None)
    return bool(check(uri)) if callable(check) else True
