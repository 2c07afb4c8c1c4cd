"""``ReplicationConfig``: one region's whole configuration, and the look-ups the service makes in it."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from .database import MirrorsDatabaseConfig, RefstoreDatabaseConfig
from .errors import ConfigError, _FieldError, _Parts
from .sections import (
    AuthConfig,
    CommitSensorConfig,
    FreshnessConfig,
    GarbageCollectionConfig,
    HooksConfig,
    LakeFSCredentials,
    LakeFSFrontConfig,
    LoggingConfig,
    MetricsConfig,
    MirrorsManagerConfig,
    SparkConfig,
    TLSConfig,
    TransferConfig,
    ValidatorConfig,
)
from .stores import BlockstoreConfig, BlockstoresConfig, StoreConfig
from .values import (
    Secret,
    _at_least,
    _http_url,
    _listen_address,
    _meta,
    _nonempty,
    _region_name,
    format_duration,
)

__all__ = ["ReplicationConfig"]


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
    refstore_database: RefstoreDatabaseConfig | None = None
    blockstore: BlockstoreConfig | None = None
    blockstores: BlockstoresConfig | None = None
    auth: AuthConfig
    listen_address: str = field(default="0.0.0.0:8008", metadata=_meta(_listen_address))
    tls: TLSConfig = field(default_factory=TLSConfig)
    lakefs_front: LakeFSFrontConfig = field(default_factory=LakeFSFrontConfig)
    list_mirrors_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))
    list_repositories_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    commit_sensor: CommitSensorConfig = field(default_factory=CommitSensorConfig)
    mirrors_manager: MirrorsManagerConfig = field(default_factory=MirrorsManagerConfig)
    freshness: FreshnessConfig = field(default_factory=FreshnessConfig)
    validator: ValidatorConfig = field(default_factory=ValidatorConfig)
    lakefs: LakeFSCredentials = field(default_factory=LakeFSCredentials)
    region_credentials: Mapping[str, LakeFSCredentials] = field(
        default_factory=dict, metadata=_meta(key_check=_region_name, region_keyed=True)
    )
    transfer: TransferConfig = field(default_factory=TransferConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    garbage_collection: GarbageCollectionConfig = field(default_factory=GarbageCollectionConfig)
    hooks: HooksConfig = field(default_factory=HooksConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
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
        if self.lakefs_front.enabled and urlsplit(self.regional_endpoint).path not in ("", "/"):
            raise _FieldError(
                ("lakefs_front", "enabled"),
                f"needs regional_endpoint to be lakeFS's root URL, without a path (got {self.regional_endpoint!r}): "
                "requests pass through with their own paths",
            )
        if self.transfer.mode == "external" and self.transfer.max_bytes_per_second:
            raise _FieldError(
                ("transfer", "max_bytes_per_second"),
                "has no effect with transfer.mode: external (the store's replication moves the objects, not this "
                "service); remove it or use mode: copy",
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

    def lakefs_credentials_for(self, region: str) -> LakeFSCredentials:
        """The replication user's credentials for ``region``'s lakeFS, the secret still wrapped."""
        if region not in self.known_regions:
            raise ConfigError(
                f"no lakeFS credentials for unknown region {region!r}{_suggest(region, self.known_regions)}; "
                f"{_known_text(self.known_regions)}",
                path="region_credentials",
            )
        return self.region_credentials.get(region, self.lakefs)

    def credentials_for(self, region: str) -> tuple[str, str]:
        """``(access_key_id, secret_access_key)`` for ``region``'s lakeFS (revealed: for the client only)."""
        creds = self.lakefs_credentials_for(region)
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
