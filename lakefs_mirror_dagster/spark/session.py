"""The SparkSession every Spark path runs in: its settings from the config's ``spark`` section, and the one
place that prepares Python workers and starts it (lazily: a sync whose batches stay small never starts Spark)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from ..config import SparkConfig
from ..errors import require_extra

__all__ = ["LazySparkSession", "prepare_python_workers", "spark_session_config"]

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


def prepare_python_workers() -> None:
    """Python workers must import this package: run them with this interpreter unless told otherwise.

    Every route that starts Spark comes here first, so an install without the ``spark`` extra is told which
    extra to install before anything imports pyspark."""
    require_extra("spark", "Spark (sync --spark, spark.transfer_enabled, validation on Spark)", "pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


class LazySparkSession:
    """A SparkSession built from ``conf`` on first call."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        # Before a sync starts, not mid-way through it when its first big batch starts Spark.
        require_extra("spark", "Spark (sync --spark, spark.transfer_enabled)", "pyspark")
        self.conf = dict(conf)
        self._session: Any = None

    def __call__(self) -> Any:
        if self._session is None:
            prepare_python_workers()
            from pyspark.sql import SparkSession

            builder = SparkSession.builder
            for key, value in self.conf.items():
                builder = builder.config(key, value)
            self._session = builder.getOrCreate()
        return self._session

    @property
    def started(self) -> bool:
        return self._session is not None

    def stop(self) -> None:
        if self._session is not None:
            self._session.stop()
            self._session = None
