"""``spark``: object transfer on Spark, off by default, its fields from YAML and env, bad values named."""

from __future__ import annotations

from typing import Any

import pytest

from lakefs_mirror_dagster.config import parse_config
from tests.config.config_data import error_of, minimal


def test_spark_transfer_is_off_by_default_with_a_threshold() -> None:
    spark = parse_config(minimal()).spark
    assert spark.transfer_enabled is False
    assert spark.transfer_threshold_objects > 0 and spark.transfer_max_partitions >= 1


def test_spark_transfer_fields_from_yaml_and_env() -> None:
    data = minimal(spark={"transfer_enabled": True, "transfer_threshold_objects": 20000})
    config = parse_config(data, env={"REPLICATION_SPARK_TRANSFER_MAX_PARTITIONS": "32"})
    assert (config.spark.transfer_enabled, config.spark.transfer_threshold_objects) == (True, 20000)
    assert config.spark.transfer_max_partitions == 32
    assert parse_config(minimal(spark={"transfer_threshold_objects": 0})).spark.transfer_threshold_objects == 0


@pytest.mark.parametrize(
    ("spark", "path", "fragment"),
    [
        ({"transfer_threshold_objects": -1}, "spark.transfer_threshold_objects", "at least 0"),
        ({"transfer_max_partitions": 0}, "spark.transfer_max_partitions", "at least 1"),
        ({"transfer_enabled": "maybe"}, "spark.transfer_enabled", "true or"),
        ({"transfer_treshold_objects": 5}, "spark.transfer_treshold_objects", "transfer_threshold_objects"),
    ],
)
def test_bad_spark_transfer_values_name_the_field(spark: dict[str, Any], path: str, fragment: str) -> None:
    err = error_of(minimal(spark=spark))
    assert err.path.startswith(path), str(err)
    assert fragment in str(err)
