"""The one function that puts Spark into a ``MirrorEngine``: ``use_spark``. The CLI (``sync --spark``, through
``SparkTransferService``) and the Dagster resource both call it, so both paths choose and report the same way."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import ReplicationConfig
from ..mirrors import Mirror
from ..region import ReplicationService
from ..region.service import store_spec
from ..replication import MirrorEngine, RangeTransferer, RangeValidator
from .choice import ThresholdTransferer, changed_object_counter
from .transfer import SparkRangeTransferer, TransferTarget
from .validation import SparkRangeValidator

__all__ = ["SparkTransferService", "SparkUse", "ValidationOnSpark", "spark_transferer_for", "use_spark"]


@dataclass(frozen=True)
class ValidationOnSpark:
    """Validate ranges in Spark tasks: spread over ``num_partitions``; batches under ``min_ranges`` stay here."""

    num_partitions: int
    min_ranges: int


@dataclass
class SparkUse:
    """What ``use_spark`` put into an engine (each None when that part stays in-process)."""

    transferer: ThresholdTransferer | None = None
    validator: SparkRangeValidator | None = None


def _secrets_for(service: ReplicationService, mirror: Mirror) -> dict[str, Any]:
    """Store settings (and source API keys when the source's store is not configured) for the tasks."""
    config = service.config
    secrets: dict[str, Any] = {"destination_store": store_spec(config, config.store_by_id(mirror.storage_id))}
    src_store = config.source_store_for(mirror.source_region)
    if src_store is not None:
        secrets["source_store"] = store_spec(config, src_store)
    else:
        creds = config.lakefs_credentials_for(mirror.source_region)
        secrets["source_lakefs"] = {
            "endpoint": config.endpoint_for(mirror.source_region),
            "access_key_id": creds.access_key_id,
            "secret_access_key": creds.secret_access_key,
        }
    return secrets


def spark_transferer_for(
    service: ReplicationService, mirror: Mirror, engine: MirrorEngine, session: Callable[[], Any]
) -> ThresholdTransferer:
    """The transferer for ``mirror``'s engine: Spark tasks at or above ``spark.transfer_threshold_objects``
    objects, the engine's own ``transfer_ranges`` below it. It reads the source as the engine does."""
    config = service.config
    source = engine.source
    target = TransferTarget(
        repository=source.repository,
        source_namespace=source.storage_namespace,
        destination_namespace=mirror.storage_namespace,
        concurrency=config.transfer.concurrency,
        max_bytes_in_flight=config.transfer.max_bytes_in_flight,
        max_bytes_per_second=config.transfer.max_bytes_per_second,
    )
    spark_path = SparkRangeTransferer(
        session, _secrets_for(service, mirror), target, max_partitions=config.spark.transfer_max_partitions
    )
    return ThresholdTransferer(
        spark=spark_path,
        in_process=engine.transfer_ranges,
        count_objects=changed_object_counter(
            functools.partial(source.read_metadata, "meta_range"),
            functools.partial(source.read_metadata, "range"),
            engine.dst_store,
            engine.dst_ns,
            engine.range_reads,
        ),
        threshold=config.spark.transfer_threshold_objects,
    )


def spark_validator_for(
    service: ReplicationService, mirror: Mirror, session: Callable[[], Any], validation: ValidationOnSpark
) -> SparkRangeValidator:
    """A validator for ``mirror``'s destination store and namespace whose big batches run on Spark."""
    config = service.config
    return SparkRangeValidator(
        session,
        store_spec(config, config.store_by_id(mirror.storage_id)),
        mirror.storage_namespace,
        strict_full_addresses=config.transfer.strict_full_addresses,
        num_partitions=validation.num_partitions,
        min_ranges=validation.min_ranges,
        local_workers=config.validator.num_workers,
    )


def use_spark(
    service: ReplicationService,
    mirror: Mirror,
    engine: MirrorEngine,
    session: Callable[[], Any],
    *,
    transfer: bool,
    validation: ValidationOnSpark | None,
) -> SparkUse:
    """Copy big batches on Spark (``transfer``) and/or validate on Spark (``validation``); the session starts
    on the first batch that needs it, never for small commits. An engine in ``transfer.mode: external`` copies
    no objects, so it keeps its own transferer (the range files only) whatever ``transfer`` says."""
    use = SparkUse()
    if transfer and engine.copy_objects:
        use.transferer = spark_transferer_for(service, mirror, engine, session)
        engine.transferer = use.transferer
    if validation is not None:
        use.validator = spark_validator_for(service, mirror, session, validation)
        engine.validator = use.validator
    return use


class SparkTransferService(ReplicationService):
    """A ``ReplicationService`` whose engines transfer on Spark (above the threshold): what ``sync --spark`` runs."""

    def __init__(self, config: ReplicationConfig, session: Callable[[], Any], **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.session = session
        self.transferers: dict[str, ThresholdTransferer] = {}

    def engine_for(
        self,
        mirror: Mirror,
        *,
        validator: RangeValidator | None = None,
        transferer: RangeTransferer | None = None,
    ) -> MirrorEngine:
        engine = super().engine_for(mirror, validator=validator, transferer=transferer)
        if transferer is None:
            use = use_spark(self, mirror, engine, self.session, transfer=True, validation=None)
            if use.transferer is not None:
                self.transferers[mirror.name] = use.transferer
        return engine
