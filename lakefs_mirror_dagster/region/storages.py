"""The stores a region is connected to, as users see them, and the start-up check that mirrors still have one.

A mirror names its destination store by ``storage_id``; when a store is removed from ``blockstores.stores``
while a mirror still uses it (or a mirror was created naming a store this region never had), that mirror
goes to state ``failed`` with the reason, and every entry point (``serve``, ``sync``, the Dagster code
location) goes on with the others: one bad mirror never takes a region down.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ..config import ConfigError, ReplicationConfig, StoreConfig
from ..mirrors import Mirror, MirrorState

__all__ = ["StorageDescription", "describe_storages", "missing_stores"]

_LIVE_STATES = frozenset({MirrorState.PENDING, MirrorState.CREATING, MirrorState.ACTIVE, MirrorState.FAILED})


@dataclass(frozen=True)
class StorageDescription:
    """One connected store: what ``GET .../config/storages`` and ``lakefs-mirror storages list`` show."""

    id: str
    type: str
    description: str
    backward_compatible: bool
    namespace_example: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _namespace_example(store: StoreConfig) -> str:
    """A storage namespace a repository on ``store`` could use (what to type into ``storage_namespace``)."""
    if store.type == "local":
        return f"local://{store.local.path.rstrip('/')}/<repository>"
    if store.type == "azure":
        account = store.azure.storage_account or "<account>"
        return f"https://{account}.{store.azure.domain}/<container>/<prefix>/<repository>"
    return f"{store.type}://<bucket>/<prefix>/<repository>"


def describe_storages(config: ReplicationConfig) -> list[StorageDescription]:
    """This region's stores in config order (a single ``blockstore`` is the store with id ``""``)."""
    return [
        StorageDescription(
            id=store.id,
            type=store.type,
            description=store.description,
            backward_compatible=store.backward_compatible,
            namespace_example=_namespace_example(store),
        )
        for store in config.stores
    ]


def missing_stores(config: ReplicationConfig, mirrors: Iterable[Mirror]) -> dict[str, str]:
    """Mirror ID -> why, for each live mirror of this region whose destination store is not configured."""
    configured = ", ".join(repr(s.id) for s in config.stores)
    missing: dict[str, str] = {}
    for mirror in mirrors:
        if mirror.destination_region != config.region or mirror.state not in _LIVE_STATES:
            continue
        try:
            config.store_by_id(mirror.storage_id)
        except ConfigError:
            missing[mirror.id] = (
                f"store {mirror.storage_id!r} of mirror {mirror.name} is not among this region's stores "
                f"({configured}): put it back into blockstores.stores, or delete the mirror"
            )
    return missing
