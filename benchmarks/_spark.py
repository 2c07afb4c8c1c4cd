"""A local Spark session for the benchmarks, importable without putting any tree on ``sys.path`` (a child
process measuring another tree imports it too)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["local_spark"]


def local_spark(warehouse: Path, cores: int = 2) -> Any:
    """A local-mode SparkSession (``local[cores]``) on loopback, built like the test suite's ``spark`` fixture."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers must import this package
    return (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("lakefs-mirror-bench")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # no progress bars among the figures
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
