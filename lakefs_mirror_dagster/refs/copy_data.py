"""Copying a repository's whole storage namespace (data objects and ``_lakefs/`` files) to a new store.

This is step 4 of the reference's migration ("copy repository data"), done with our own transfer code
instead of ``aws s3 sync``/``rclone``: the stores come from the replication config's stores, the old one
resolved by the manifest's namespace, so any pair of configured stores works (MinIO to local disk, S3 to
another S3 endpoint, ...). The target must be empty; a failed copy removes what it wrote.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..config import Concurrency, ReplicationConfig
from ..storage import (
    Blockstore,
    CopyResult,
    CopyTask,
    StorageConfigError,
    StorageError,
    StoreRegistry,
    TransferPool,
    TransferSummary,
    join_namespace,
    relative_to_namespace,
)
from ..storage.uri import namespace_prefix, same_namespace
from .errors import RefsError
from .manifest import RepositoryManifest

__all__ = [
    "CopyOutcome",
    "copy_namespace",
    "copy_repository_data",
    "remove_objects",
    "stores_for_copy",
    "summary_json",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CopyOutcome:
    """The manifest rewritten to the new namespace, what was copied, and the URIs written (for rollback)."""

    manifest: RepositoryManifest
    summary: TransferSummary
    written: tuple[str, ...]
    destination: Blockstore


def _registry(config: ReplicationConfig) -> StoreRegistry:
    t = config.transfer
    return StoreRegistry.from_settings(
        config.stores, multipart_threshold=t.multipart_threshold, multipart_chunk_size=t.multipart_chunk_size
    )


def stores_for_copy(
    config: ReplicationConfig, manifest: RepositoryManifest, target_namespace: str, target_storage_id: str = ""
) -> tuple[Blockstore, Blockstore]:
    """``(old store, new store)`` from the config's stores.

    The old store is found by the manifest's namespace (scheme, S3 bucket, local root); when several
    could serve it, by the manifest's storage id. The new one by ``target_storage_id`` when the config
    has a store with that id, else by the target namespace.
    """
    registry = _registry(config)
    try:
        try:
            source = registry.store_for_uri(manifest.storage_namespace)
        except StorageConfigError:
            if not manifest.storage_id or manifest.storage_id not in registry:
                raise
            source = registry.store_for_uri(manifest.storage_namespace, manifest.storage_id)
    except StorageError as exc:
        raise RefsError(
            f"repository {manifest.name}: no configured store can read its old namespace "
            f"{manifest.storage_namespace} ({exc}); add that store to blockstores.stores of the config"
        ) from exc
    try:
        by_id = target_storage_id if target_storage_id in registry else None
        destination = registry.store_for_uri(target_namespace, by_id)
    except StorageError as exc:
        raise RefsError(
            f"repository {manifest.name}: no configured store can write the new namespace {target_namespace} ({exc})"
        ) from exc
    return source, destination


def remove_objects(store: Blockstore, uris: tuple[str, ...] | list[str]) -> None:
    """Delete what a copy wrote (rollback); absent objects are fine."""
    for uri in uris:
        store.delete(uri)


def copy_namespace(
    source: Blockstore,
    source_namespace: str,
    destination: Blockstore,
    destination_namespace: str,
    *,
    concurrency: Concurrency = 8,
) -> tuple[TransferSummary, tuple[str, ...]]:
    """Copy every object under ``source_namespace`` to the same relative key under ``destination_namespace``.

    Refuses a target that already holds objects (it would mix two repositories' files) and a source that
    holds none (a wrong namespace or store). On any failed object, removes everything it wrote and raises.
    """
    if same_namespace(source_namespace, destination_namespace) and source is destination:
        raise RefsError(f"copy: source and target namespace are the same ({source_namespace})")
    existing = next(iter(destination.list_prefix(namespace_prefix(destination_namespace))), None)
    if existing is not None:
        raise RefsError(
            f"target namespace {destination_namespace} already holds objects (e.g. {existing.uri}) in "
            f"{destination.describe()}; choose an empty namespace"
        )
    if next(iter(source.list_prefix(namespace_prefix(source_namespace))), None) is None:
        raise RefsError(
            f"old namespace {source_namespace} holds no objects in {source.describe()}: wrong namespace or store?"
        )

    def tasks() -> Iterator[CopyTask]:
        for obj in source.list_prefix(namespace_prefix(source_namespace)):
            relative = relative_to_namespace(source_namespace, obj.uri)
            if relative is None:  # pragma: no cover - list_prefix only yields URIs under the prefix
                continue
            yield CopyTask(source, obj.uri, destination, join_namespace(destination_namespace, relative), obj.size)

    written: list[str] = []
    lock = threading.Lock()

    def on_result(result: CopyResult) -> None:
        with lock:
            written.append(result.dst_uri)

    pool = TransferPool(concurrency=concurrency, skip_existing=False, on_result=on_result)
    summary = pool.run(tasks())
    if not summary.ok:
        remove_objects(destination, written)
        try:
            summary.raise_on_failure()
        except StorageError as exc:
            raise RefsError(
                f"copy {source_namespace} -> {destination_namespace}: {exc}; the objects copied so far were removed"
            ) from exc
    return summary, tuple(written)


def copy_repository_data(
    config: ReplicationConfig,
    manifest: RepositoryManifest,
    target_namespace: str,
    *,
    target_storage_id: str = "",
    concurrency: int | None = None,
) -> CopyOutcome:
    """Copy ``manifest``'s namespace to ``target_namespace``; returns the manifest pointing there."""
    moved = manifest.with_namespace(target_namespace)
    source, destination = stores_for_copy(config, manifest, target_namespace, target_storage_id)
    log.info(
        "copying %s (%s) to %s (%s)",
        manifest.storage_namespace,
        source.describe(),
        target_namespace,
        destination.describe(),
    )
    summary, written = copy_namespace(
        source,
        manifest.storage_namespace,
        destination,
        target_namespace,
        concurrency=concurrency or config.transfer.concurrency,
    )
    return CopyOutcome(manifest=moved, summary=summary, written=written, destination=destination)


def summary_json(summary: TransferSummary) -> dict[str, Any]:
    """Counts for logs and Dagster metadata."""
    return {
        "copied": summary.copied,
        "bytes_copied": summary.bytes_copied,
        "server_side": summary.server_side,
        "retries": summary.retries,
    }
