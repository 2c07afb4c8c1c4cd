"""Session fixtures: real lakeFS regions, MinIO, PostgreSQL, DynamoDB Local and Spark, started through ``devenv``.

The layout covers every store pair the suite needs: ``region-a`` on MinIO ``minio-a``, ``region-b`` on the
local blockstore, ``region-c`` on a second MinIO server (``minio-c``) with other credentials. A missing Go
toolchain or a failed build is an error, never a skip.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lakefs_mirror_devenv import Environment, LakeFSRegion, MinioInstance, RegionSpec, environment_up
from lakefs_mirror_devenv.environment import stop_environment

from lakefs_mirror_dagster.lakefs import LakeFSClient

TEST_REGIONS = (
    RegionSpec("region-a", "s3:minio-a"),
    RegionSpec("region-b", "local"),
    RegionSpec("region-c", "s3:minio-c"),
)


@pytest.fixture(scope="session")
def lakefs_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    """Three lakeFS regions and two MinIO servers for the whole session, stopped at the end."""
    state_dir = tmp_path_factory.mktemp("devenv")
    env = environment_up(state_dir, TEST_REGIONS)
    try:
        yield env
    finally:
        stop_environment(env)


@pytest.fixture(scope="session")
def region_a(lakefs_env: Environment) -> LakeFSRegion:
    return lakefs_env.region("region-a")


@pytest.fixture(scope="session")
def region_b(lakefs_env: Environment) -> LakeFSRegion:
    return lakefs_env.region("region-b")


@pytest.fixture(scope="session")
def region_c(lakefs_env: Environment) -> LakeFSRegion:
    return lakefs_env.region("region-c")


@pytest.fixture(scope="session")
def minio(lakefs_env: Environment) -> MinioInstance:
    """The MinIO server behind region-a (attributes ``endpoint``, ``access_key``, ``secret_key``)."""
    return lakefs_env.minio["minio-a"]


@pytest.fixture(scope="session")
def client_for(lakefs_env: Environment) -> Iterator[Callable[[str], LakeFSClient]]:
    """A cached admin client per region name."""
    clients: dict[str, LakeFSClient] = {}

    def get(name: str) -> LakeFSClient:
        if name not in clients:
            r = lakefs_env.region(name)
            clients[name] = LakeFSClient(r.endpoint, r.access_key_id, r.secret_access_key)
        return clients[name]

    yield get
    for c in clients.values():
        c.close()


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real PostgreSQL server (installed from Debian packages when missing)."""
    from lakefs_mirror_devenv.postgres import PostgresServer

    server = PostgresServer.start(tmp_path_factory.mktemp("postgres"), durable=False)
    try:
        yield server
    finally:
        server.stop(remove_data=True)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: Any) -> str:
    return str(postgres_server.url)


@pytest.fixture(scope="session")
def dynamodb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One in-memory DynamoDB Local (``-sharedDb``: one set of tables whatever region a client signs for)."""
    from lakefs_mirror_devenv.dynamodb_local import DynamoDBLocal

    server = DynamoDBLocal.start(tmp_path_factory.mktemp("dynamodb-local"), stop_at_exit=True)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def dynamodb_settings(dynamodb_server: Any) -> Any:
    """``mirrors_database.dynamodb`` for a table no other test uses (the store creates it) on DynamoDB Local."""
    from lakefs_mirror_devenv import DEVENV_TABLE
    from lakefs_mirror_devenv.replication_config import dynamodb_local_settings

    from lakefs_mirror_dagster.config.database import DynamoDBSettings
    from lakefs_mirror_dagster.config.values import Secret

    raw = dynamodb_local_settings({"endpoint": dynamodb_server.endpoint, "table_name": DEVENV_TABLE})
    raw.update(
        table_name=f"mirrors-{uuid.uuid4().hex[:16]}", aws_secret_access_key=Secret(raw["aws_secret_access_key"])
    )
    return DynamoDBSettings(**raw)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local-mode SparkSession from the pyspark wheel, bound to loopback, with the cached hadoop-aws jars
    on its classpath (a JVM's classpath cannot grow later, and tests/clients reads and writes ``s3a://``)."""
    from lakefs_mirror_devenv.hadoop_jars import ensure_hadoop_aws_jars
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers import the package: this venv's interpreter, not the first python3 on PATH (tests/spark's
    # and tests/orchestration's conftests set it too, but a run of other paths loads neither).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("lakefs-mirror-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.jars", ",".join(str(jar) for jar in ensure_hadoop_aws_jars()))
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def unique_name() -> Callable[[str], str]:
    """Repository-safe unique names (lakeFS: ``^[a-z0-9][a-z0-9-]{2,62}$``)."""

    def make(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    return make


def pytest_report_header(config: pytest.Config) -> list[str]:
    from lakefs_mirror_devenv import LAKEFS_VERSION, MINIO_VERSION, cache_dir

    return [f"lakeFS {LAKEFS_VERSION}, MinIO {MINIO_VERSION}, binaries cached in {cache_dir()}"]


@pytest.fixture(autouse=True)
def _package_logging_restored() -> Iterator[None]:
    """A test that runs the CLI or loads the code location in-process configures the package's logging
    (``logging.format``, its own handler); the next test starts from Python's defaults again."""
    logger = logging.getLogger("lakefs_mirror_dagster")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)  # (clears the loggers' cached levels)
    logger.propagate = propagate
