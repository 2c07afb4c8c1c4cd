"""The replication service's configuration: one typed, frozen tree read from YAML plus ``REPLICATION_`` env.

Why a hand-written loader instead of a generic one: a misconfigured replication service must refuse to start
with *one* message that names the exact field (``commit_sensor.process_branches_duration: ...``), suggests
the key that was probably meant, says whether the bad value came from the file or from which environment
variable, and never prints a secret. The schema is plain frozen dataclasses; the loader walks their type
hints, so the schema is the single source of truth for YAML keys, environment variable names, defaults and
the example file.

Shape and defaults follow the Transactional Mirroring reference ("Configuration Reference") and, for storage,
lakeFS's own ``blockstore`` / ``blockstores`` sections (multi-storage reference); the sections ``lakefs``,
``region_credentials``, ``transfer``, ``spark``, ``source_stores``, ``garbage_collection`` and the sqlite/postgres
``mirrors_database`` are this implementation's own.

One module per concern: ``values`` (secrets, durations, byte sizes, field checks), ``stores`` (blockstore
settings), ``database`` (mirrors database, PostgreSQL URLs), ``sections`` (auth, logging, sensors, validator,
transfer, spark, garbage collection), ``model`` (``ReplicationConfig``), ``binder`` (data to dataclasses), ``env``
(``REPLICATION_*``), ``loader`` (``load_config``, ``parse_store``) and ``example.yaml``
(``dump_example_config()``). Import from this package, not from the modules.
"""

from .database import DynamoDBSettings, MirrorsDatabaseConfig, PostgresSettings, SqliteSettings
from .env import CONFIG_PATH_ENV, ENV_PREFIX
from .errors import ConfigError
from .loader import dump_example_config, load_config, parse_config, parse_store
from .model import ReplicationConfig
from .sections import (
    AuthApiConfig,
    AuthCacheConfig,
    AuthConfig,
    CommitSensorConfig,
    EncryptConfig,
    FreshnessConfig,
    GarbageCollectionConfig,
    HooksConfig,
    LakeFSCredentials,
    LakeFSFrontConfig,
    LoggingConfig,
    MetricsConfig,
    MirrorsManagerConfig,
    SparkConfig,
    TLSConfig,
    TransferConfig,
    ValidatorConfig,
)
from .stores import (
    AzureSettings,
    BlockstoreConfig,
    BlockstoresConfig,
    BlockstoreType,
    GSSettings,
    LocalSettings,
    S3Credentials,
    S3Settings,
    StoreConfig,
    StoreSettings,
)
from .values import ByteSize, Secret, format_duration, parse_byte_size, parse_duration, parse_listen_address

__all__ = [
    "CONFIG_PATH_ENV",
    "ENV_PREFIX",
    "AuthApiConfig",
    "AuthCacheConfig",
    "AuthConfig",
    "AzureSettings",
    "BlockstoreConfig",
    "BlockstoreType",
    "BlockstoresConfig",
    "ByteSize",
    "CommitSensorConfig",
    "ConfigError",
    "DynamoDBSettings",
    "EncryptConfig",
    "FreshnessConfig",
    "GSSettings",
    "GarbageCollectionConfig",
    "HooksConfig",
    "LakeFSCredentials",
    "LakeFSFrontConfig",
    "LocalSettings",
    "LoggingConfig",
    "MetricsConfig",
    "MirrorsDatabaseConfig",
    "MirrorsManagerConfig",
    "PostgresSettings",
    "ReplicationConfig",
    "S3Credentials",
    "S3Settings",
    "Secret",
    "SparkConfig",
    "SqliteSettings",
    "StoreConfig",
    "StoreSettings",
    "TLSConfig",
    "TransferConfig",
    "ValidatorConfig",
    "dump_example_config",
    "format_duration",
    "load_config",
    "parse_byte_size",
    "parse_config",
    "parse_duration",
    "parse_listen_address",
    "parse_store",
]
