"""The Spark wing's plugs for a ``MirrorEngine``: ``SparkPlugs``, an ``EnginePlugs`` chosen before each engine is
built. The CLI (``sync --spark``) and the Dagster resource both hand one to the service, so both paths choose and
report the same way."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import ReplicationConfig
from ..mirrors import Mirror
from ..region.service import store_spec
from ..replication import InProcessTransferer, Plugs
from .choice import ThresholdTransferer, changed_object_counter
from .transfer import SparkRangeTransferer, TransferTarget
from .validation import SparkRangeValidator

__all__ = ["SparkPlugs", "SparkUse", "ValidationOnSpark", "spark_transferer_for", "spark_validator_for"]


@dataclass(frozen=True)
class ValidationOnSpark:
    """Validate ranges in Spark tasks: spread over ``num_partitions``; batches under ``min_ranges`` stay here."""

    num_partitions: int
    min_ranges: int


@dataclass
class SparkUse:
    """What ``SparkPlugs`` chose for one engine (each None when that part stays in-process)."""

    transferer: ThresholdTransferer | None = None
    validator: SparkRangeValidator | None = None


def _secrets_for(config: ReplicationConfig, mirror: Mirror) -> dict[str, Any]:
    """Store settings (and source API keys when the source's store is not configured) for the tasks."""
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
    config: ReplicationConfig, mirror: Mirror, in_process: InProcessTransferer, session: Callable[[], Any]
) -> ThresholdTransferer:
    """The transferer for ``mirror``'s engine: Spark tasks at or above ``spark.transfer_threshold_objects``
    objects, the engine's own ``in_process`` transfer below it. It reads the source as the engine does."""
    source = in_process.source
    target = TransferTarget(
        repository=source.repository,
        source_namespace=source.storage_namespace,
        destination_namespace=mirror.storage_namespace,
        concurrency=config.transfer.concurrency,
        max_bytes_in_flight=config.transfer.max_bytes_in_flight,
        max_bytes_per_second=config.transfer.max_bytes_per_second,
    )
    spark_path = SparkRangeTransferer(
        session, _secrets_for(config, mirror), target, max_partitions=config.spark.transfer_max_partitions
    )
    return ThresholdTransferer(
        spark=spark_path,
        in_process=in_process,
        count_objects=changed_object_counter(
            functools.partial(source.read_metadata, "meta_range"),
            functools.partial(source.read_metadata, "range"),
            in_process.store,
            in_process.namespace,
            in_process.reads,
        ),
        threshold=config.spark.transfer_threshold_objects,
    )


def spark_validator_for(
    config: ReplicationConfig, mirror: Mirror, session: Callable[[], Any], validation: ValidationOnSpark
) -> SparkRangeValidator:
    """A validator for ``mirror``'s destination store and namespace whose big batches run on Spark."""
    return SparkRangeValidator(
        session,
        store_spec(config, config.store_by_id(mirror.storage_id)),
        mirror.storage_namespace,
        strict_full_addresses=config.transfer.strict_full_addresses,
        num_partitions=validation.num_partitions,
        min_ranges=validation.min_ranges,
        local_workers=config.validator.num_workers,
    )


class SparkPlugs:
    """An ``EnginePlugs``: copy big batches on Spark (``transfer``) and/or validate on Spark (``validation``);
    the session starts on the first batch that needs it, never for small commits. An engine in ``transfer.mode:
    external`` copies no objects, so it keeps its own transferer (the range files only) whatever ``transfer``
    says. ``uses`` keeps what was chosen for each mirror's engine (by mirror name), for reports."""

    def __init__(
        self,
        config: ReplicationConfig,
        session: Callable[[], Any],
        *,
        transfer: bool,
        validation: ValidationOnSpark | None = None,
    ) -> None:
        self.config = config
        self.session = session
        self.transfer = transfer
        self.validation = validation
        self.uses: dict[str, SparkUse] = {}

    def __call__(self, mirror: Mirror, in_process: InProcessTransferer) -> Plugs:
        use = SparkUse()
        if self.transfer and in_process.copy_objects:
            use.transferer = spark_transferer_for(self.config, mirror, in_process, self.session)
        if self.validation is not None:
            use.validator = spark_validator_for(self.config, mirror, self.session, self.validation)
        self.uses[mirror.name] = use
        return Plugs(transferer=use.transferer, validator=use.validator)
