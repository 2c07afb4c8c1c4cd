"""Dagster resources: the region's replication service and the Spark range validator."""

from .replication import CONFIG_ENV, ReplicationResource, resolve_config_path
from .spark import SparkValidatorResource, spark_session_config

__all__ = [
    "CONFIG_ENV",
    "ReplicationResource",
    "SparkValidatorResource",
    "resolve_config_path",
    "spark_session_config",
]
