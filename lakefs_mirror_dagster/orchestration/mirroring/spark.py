"""``SparkValidatorResource``: Spark for the mirror assets' runs (validation, and big transfers when enabled)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from ...config import SparkConfig
from ...errors import needs_extra
from ...mirrors import Mirror
from ...region import ReplicationService
from ...replication import MirrorEngine
from ...spark.session import prepare_python_workers, spark_session_config
from ...spark.wiring import SparkPlugs, SparkUse, ValidationOnSpark

__all__ = ["SparkValidatorResource"]

#: Seconds between the progress lines of a run (a Dagster run's log; the CLI has its own cadence).
RUN_PROGRESS_EVERY_S = 10.0


class SparkValidatorResource(dg.ConfigurableResource):
    """Hands a run's engine Spark validation (and Spark transfer when ``spark.transfer_enabled``).

    The session comes from dagster-pyspark's ``LazyPySparkResource``, built on the first ``session()`` call, so
    it starts on the first batch big enough, never when definitions load or a sensor ticks. It is not a nested
    resource field because that would import ``dagster_pyspark`` and ``pyspark`` (about half a second) in every
    run worker and sensor process, including the many runs that never start Spark.
    """

    spark_config: dict[str, str] = Field(description="SparkSession settings, passed to ``LazyPySparkResource``.")
    num_workers: int = Field(default=3, ge=1, description="Spark partitions the range IDs are spread over.")
    min_ranges: int = Field(
        default=16, ge=0, description="Batches of fewer ranges are validated in-process (no Spark session)."
    )
    _pyspark: Any = PrivateAttr(default=None)

    def engine_for(
        self,
        service: ReplicationService,
        mirror: Mirror,
        *,
        log: Callable[[str], None] | None = None,
        per_ref: bool = True,
    ) -> tuple[MirrorEngine, SparkUse]:
        """The engine a run uses, built with the same ``SparkPlugs`` the CLI uses, and what they chose; ``log`` (the
        run's log) gets a progress line every ``RUN_PROGRESS_EVERY_S`` seconds of a long transfer and, with
        ``per_ref``, when a ref starts and ends (a run of many branches logs each branch's outcome itself)."""
        plugs = SparkPlugs(
            service.config,
            self.session,
            transfer=service.config.spark.transfer_enabled,
            validation=ValidationOnSpark(num_partitions=self.num_workers, min_ranges=self.min_ranges),
        )
        engine = service.engine_for(mirror, plugs=plugs)
        if log is not None:
            engine.progress.listen(
                lambda p: log(f"progress: {p.line()}"), every_s=RUN_PROGRESS_EVERY_S, per_ref=per_ref
            )
        return engine, plugs.uses[mirror.name]

    def session(self) -> Any:
        """The run's SparkSession, started on the first call."""
        prepare_python_workers()
        if self._pyspark is None:
            with needs_extra("spark", "Spark validation in Dagster runs"):
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
