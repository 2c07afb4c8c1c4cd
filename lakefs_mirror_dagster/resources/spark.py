"""``SparkValidatorResource``: validates replicated ranges on Spark before a branch is promoted."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from ..config import SparkConfig
from ..mirrors import Mirror
from ..replication import ReplicationService
from ..replication.engine import MirrorEngine, RangeTransferer
from ..replication.service import store_spec
from ..spark_transfer import ThresholdTransferer, spark_transferer_for
from ..spark_validation import SparkRangeValidator

__all__ = ["SparkValidatorResource", "spark_session_config"]

_LOCAL_DEFAULTS = {
    # Local mode stays on loopback and starts no web UI.
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
}


def spark_session_config(spark: SparkConfig, *, app_name: str = "lakefs-mirror-validation") -> dict[str, str]:
    """Session settings from the replication config's ``spark`` section (``conf`` wins over defaults)."""
    conf: dict[str, str] = {"spark.master": spark.master, "spark.app.name": app_name}
    if spark.master.startswith("local"):
        conf.update(_LOCAL_DEFAULTS)
    conf.update({str(k): str(v) for k, v in spark.conf.items()})
    return conf


class SparkValidatorResource(dg.ConfigurableResource):
    """Hands the engine a ``RangeValidator`` that runs ``validate_range`` in Spark tasks.

    The session comes from dagster-pyspark's ``LazyPySparkResource``, built on the first ``session()`` call, so
    it starts on the first validation, never when definitions load or a sensor ticks. It is not a nested
    resource field because that would import ``dagster_pyspark`` and ``pyspark`` (about half a second) in every
    run worker and sensor process, including the many runs that never start Spark.
    """

    spark_config: dict[str, str] = Field(description="SparkSession settings, passed to ``LazyPySparkResource``.")
    num_workers: int = Field(default=3, ge=1, description="Spark partitions the range IDs are spread over.")
    min_ranges: int = Field(
        default=16, ge=0, description="Batches of fewer ranges are validated in-process (no Spark session)."
    )
    _pyspark: Any = PrivateAttr(default=None)

    def validator_for(self, service: ReplicationService, mirror: Mirror) -> SparkRangeValidator:
        """A fresh validator for ``mirror``'s destination store and namespace."""
        config = service.config
        return SparkRangeValidator(
            self.session,
            store_spec(config, config.store_by_id(mirror.storage_id)),
            mirror.storage_namespace,
            strict_full_addresses=config.transfer.strict_full_addresses,
            num_partitions=self.num_workers,
            min_ranges=self.min_ranges,
        )

    def transferer_for(
        self, service: ReplicationService, mirror: Mirror, *, in_process: RangeTransferer | None = None
    ) -> ThresholdTransferer:
        """A transferer for ``mirror`` that copies on Spark when a batch reaches ``spark.transfer_threshold_objects``.

        Pass the engine's ``transfer_ranges`` as ``in_process`` for small batches. The session starts on the
        first batch that goes to Spark, never for small commits. ``last_choice`` / ``choices`` say which ran.
        """
        return spark_transferer_for(service, mirror, self.session, in_process=in_process)

    def engine_for(self, service: ReplicationService, mirror: Mirror) -> tuple[MirrorEngine, SparkRangeValidator]:
        """The engine a run uses: ranges validated on Spark; objects copied on Spark too when
        ``spark.transfer_enabled`` and a batch is big enough (small commits never start a session for it)."""
        validator = self.validator_for(service, mirror)
        engine = service.engine_for(mirror, validator=validator)
        if service.config.spark.transfer_enabled:
            engine.transferer = self.transferer_for(service, mirror, in_process=engine.transfer_ranges)
        return engine, validator

    def session(self) -> Any:
        """The run's SparkSession, started on the first call."""
        # Python workers must import this package: run them with this interpreter unless told otherwise.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if self._pyspark is None:
            from dagster_pyspark import LazyPySparkResource

            self._pyspark = LazyPySparkResource(spark_config=self.spark_config)
        return self._pyspark.spark_session

    @classmethod
    def from_config(
        cls, spark: SparkConfig, num_workers: int, extra: Mapping[str, str] | None = None
    ) -> SparkValidatorResource:
        """Built from the replication config's ``spark`` and ``validator.num_workers``."""
        conf = {**spark_session_config(spark), **(extra or {})}
        return cls(
            spark_config=conf,
            num_workers=num_workers,
            min_ranges=spark.validation_threshold_ranges,
        )
