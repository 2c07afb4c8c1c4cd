"""Blockstores built from the replication config's typed store settings, and the store that serves a URI.

``build_blockstore`` takes a ``StoreConfig`` (or ``BlockstoreConfig``) whose sizes the config already parsed (no
second size parser) and whose credentials stay ``Secret`` until handed to the client built here. lakeFS-shaped
mappings (the dev environment's regions, tests) go through the config's own checks first (``config.parse_store``),
so they are read exactly as a config file would be. ``StoreSpec`` carries a typed store to a Spark task.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from ..config import BlockstoreConfig, ConfigError, StoreConfig, parse_store
from ..errors import needs_extra
from .base import Blockstore
from .errors import StorageConfigError, UnsupportedStorageError
from .local import LocalBlockstore
from .s3 import DEFAULT_MULTIPART_CHUNK_SIZE, DEFAULT_MULTIPART_THRESHOLD, S3Blockstore
from .uri import parse_uri

if TYPE_CHECKING:  # the cloud SDKs take most of a second to import: only stores of those types load them
    from ..config import AzureSettings, GSSettings, S3Settings
    from .azure import AzureBlockstore
    from .gcs import GCSBlockstore

__all__ = ["StoreRegistry", "StoreSpec", "build_blockstore"]

_NOT_YET = {
    "mem": "in-memory",
    "transient": "transient",
}


@dataclass(frozen=True)
class StoreSpec:
    """What builds one blockstore, in this process or in a Spark task: the typed store (credentials still
    ``Secret``) and the transfer section's multipart sizes, already parsed.

    Picklable: broadcast it to the executors, never put it in a task's closure (a pickle holds the secrets
    in clear).
    """

    store: BlockstoreConfig
    multipart_threshold: int | None = None
    multipart_chunk_size: int | None = None

    def build(self) -> Blockstore:
        return build_blockstore(
            self.store, multipart_threshold=self.multipart_threshold, multipart_chunk_size=self.multipart_chunk_size
        )


def _typed(settings: BlockstoreConfig | Mapping[str, Any]) -> StoreConfig:
    """The typed store for ``settings``; a mapping is read by the config's own parser and checks."""
    if isinstance(settings, StoreConfig):
        return settings
    if isinstance(settings, BlockstoreConfig):
        return StoreConfig.from_blockstore(settings)
    if not isinstance(settings, Mapping):
        raise StorageConfigError(
            "blockstore settings must be a StoreConfig or a mapping shaped like lakeFS's, "
            f"not {type(settings).__name__}"
        )
    store_id = str(settings.get("id") or "")
    kind = str(settings.get("type") or "").lower()
    if kind in _NOT_YET:
        raise UnsupportedStorageError(f"store {store_id!r}: type {kind} is not supported yet")
    try:
        return parse_store(settings)
    except ConfigError as exc:
        raise StorageConfigError(f"store {store_id!r}: {exc}") from None


def _split_buckets(settings: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``settings`` without ``s3.buckets``, and those buckets."""
    entry = dict(settings)
    s3 = entry.get("s3")
    if not isinstance(s3, Mapping) or "buckets" not in s3:
        return entry, ()
    s3 = dict(s3)
    buckets = s3.pop("buckets") or ()
    entry["s3"] = s3
    return entry, (buckets,) if isinstance(buckets, str) else tuple(buckets)


class _Sizes(TypedDict, total=False):
    """The transfer section's multipart sizes that were given (absent: the store's own default)."""

    multipart_threshold: int
    multipart_chunk_size: int


def _size(store_id: str, name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise StorageConfigError(
            f"store {store_id!r}: {name} must be a positive number of bytes (an int the config parsed), got {value!r}"
        )
    return value


def _build_s3(store_id: str, s3: S3Settings, sizes: _Sizes) -> S3Blockstore:
    creds = s3.credentials
    try:
        return S3Blockstore(
            endpoint=s3.endpoint or None,
            region=s3.region or None,
            access_key_id=creds.access_key_id or None,
            secret_access_key=creds.secret_access_key.reveal() or None,
            session_token=creds.session_token.reveal() or None,
            force_path_style=s3.force_path_style,
            multipart_threshold=sizes.get("multipart_threshold", DEFAULT_MULTIPART_THRESHOLD),
            multipart_chunk_size=sizes.get("multipart_chunk_size", DEFAULT_MULTIPART_CHUNK_SIZE),
            max_attempts=s3.max_retries + 1,  # lakeFS counts retries, botocore attempts
            profile=s3.profile or None,
            credentials_file=s3.credentials_file or None,
            verify_tls=not s3.skip_verify_certificate_test_only,
            server_side_encryption=s3.server_side_encryption or None,
            sse_kms_key_id=s3.server_side_encryption_kms_key_id or None,
        )
    except StorageConfigError as exc:
        raise StorageConfigError(f"store {store_id!r}: {exc}") from exc


def _build_gs(store_id: str, gs: GSSettings, sizes: _Sizes) -> GCSBlockstore:
    with needs_extra("gcs", f"store {store_id!r} (type gs)"):
        from .gcs import GCSBlockstore

    try:
        return GCSBlockstore(
            endpoint=gs.endpoint or None,
            credentials_json=gs.credentials_json.reveal() or None,
            credentials_file=os.path.expanduser(gs.credentials_file) if gs.credentials_file else None,
            kms_key_name=gs.server_side_encryption_kms_key_id or None,
            **sizes,
        )
    except StorageConfigError as exc:
        raise StorageConfigError(f"store {store_id!r}: {exc}") from exc


def _build_azure(store_id: str, azure: AzureSettings, sizes: _Sizes) -> AzureBlockstore:
    with needs_extra("azure", f"store {store_id!r} (type azure)"):
        from .azure import DEFAULT_AZURE_DOMAIN, AzureBlockstore

    try:
        return AzureBlockstore(
            storage_account=azure.storage_account,
            storage_access_key=azure.storage_access_key.reveal(),
            domain=azure.domain or DEFAULT_AZURE_DOMAIN,
            endpoint=azure.test_endpoint_url or None,
            timeout_s=azure.try_timeout.total_seconds(),
            **sizes,
        )
    except StorageConfigError as exc:
        raise StorageConfigError(f"store {store_id!r}: {exc}") from exc


def build_blockstore(
    settings: BlockstoreConfig | Mapping[str, Any],
    *,
    multipart_threshold: int | None = None,
    multipart_chunk_size: int | None = None,
) -> Blockstore:
    """One blockstore from one typed store (or a lakeFS-shaped mapping, read by the config's parser).

    ``multipart_threshold`` / ``multipart_chunk_size`` are the replication config's ``transfer`` sizes, as
    ``int``s (S3, gs and azure stores use them; unset: each store's defaults). Secrets are revealed here, to the
    client only. lakeFS's ``max_retries`` becomes botocore's total attempts (+1). A mapping is lakeFS-shaped::

        {"id": "minio-prod", "type": "s3",
         "s3": {"endpoint": "http://127.0.0.1:9000", "force_path_style": True,
                "credentials": {"access_key_id": "...", "secret_access_key": "..."}}}
        {"type": "local", "local": {"path": "/var/lib/lakefs/block"}}      # no id: the store ""
    """
    store = _typed(settings)
    sizes = _Sizes()
    if (threshold := _size(store.id, "multipart_threshold", multipart_threshold)) is not None:
        sizes["multipart_threshold"] = threshold
    if (chunk_size := _size(store.id, "multipart_chunk_size", multipart_chunk_size)) is not None:
        sizes["multipart_chunk_size"] = chunk_size
    if store.type == "s3":
        return _build_s3(store.id, store.s3, sizes)
    if store.type == "gs":
        return _build_gs(store.id, store.gs, sizes)
    if store.type == "azure":
        return _build_azure(store.id, store.azure, sizes)
    return LocalBlockstore(root=store.local.path, allowed_external_prefixes=list(store.local.allowed_external_prefixes))


class StoreRegistry:
    """Blockstores by id, and the lookup of the store that serves a given URI."""

    def __init__(self) -> None:
        self._stores: dict[str, Blockstore] = {}
        self._buckets: dict[str, frozenset[str]] = {}

    @classmethod
    def from_settings(
        cls,
        stores: Iterable[BlockstoreConfig | Mapping[str, Any]],
        *,
        multipart_threshold: int | None = None,
        multipart_chunk_size: int | None = None,
    ) -> StoreRegistry:
        """Build every store of a ``blockstores.stores``-like list (see ``build_blockstore``); ids must be unique.

        A lakeFS-shaped mapping may carry ``s3.buckets`` (not a config key): the buckets that route
        ``store_for_uri`` among several S3 stores.
        """
        registry = cls()
        for settings in stores:
            buckets: Iterable[str] = ()
            if isinstance(settings, Mapping):
                settings, buckets = _split_buckets(settings)
            store = _typed(settings)
            built = build_blockstore(
                store, multipart_threshold=multipart_threshold, multipart_chunk_size=multipart_chunk_size
            )
            registry.register(store.id, built, buckets=buckets)
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
