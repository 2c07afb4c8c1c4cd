"""Storage settings, shaped like lakeFS's ``blockstore`` and ``blockstores`` sections.

``StoreConfig`` is what the blockstores are built from (``storage.build_blockstore``): a frozen dataclass whose
credentials stay ``Secret`` until the client is made, so it can be broadcast to Spark executors as it is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from .errors import _dotted, _FieldError, _Parts
from .values import (
    Secret,
    _at_least,
    _expand_path,
    _meta,
    _optional_http_url,
    _positive_duration,
    _s3_sse,
    _store_id,
)

__all__ = [
    "AzureSettings",
    "BlockstoreConfig",
    "BlockstoreType",
    "BlockstoresConfig",
    "GSSettings",
    "LocalSettings",
    "S3Credentials",
    "S3Settings",
    "StoreConfig",
    "StoreSettings",
]

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
    profile: str = ""
    credentials_file: str = ""
    credentials: S3Credentials = field(default_factory=S3Credentials)
    max_retries: int = field(default=5, metadata=_meta(_at_least(0)))
    skip_verify_certificate_test_only: bool = False
    server_side_encryption: str = field(default="", metadata=_meta(_s3_sse))
    server_side_encryption_kms_key_id: str = ""

    def _validate(self, parts: _Parts) -> None:
        if self.server_side_encryption_kms_key_id and self.server_side_encryption != "aws:kms":
            raise _FieldError(
                (*parts, "server_side_encryption_kms_key_id"),
                "a KMS key is used only with server_side_encryption: aws:kms",
            )


@dataclass(frozen=True, kw_only=True)
class LocalSettings:
    """lakeFS's ``blockstore.local``; ``path`` is ``~``-expanded like lakeFS does."""

    path: str = field(default="~/lakefs/data/block", metadata=_meta(_expand_path))
    allowed_external_prefixes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class GSSettings:
    """lakeFS's ``blockstore.gs``, plus ``endpoint`` (ours): an emulator such as fake-gcs-server or a private
    endpoint, used anonymously when no credentials are given. Without credentials or endpoint, Google's
    application default credentials apply."""

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
class BlockstoresConfig:
    """lakeFS's multi-storage ``blockstores`` section (mutually exclusive with ``blockstore``); its ``signing``
    is lakeFS's alone and refused (config/binder.py)."""

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
