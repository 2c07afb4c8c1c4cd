"""The replication service's configuration: one typed, frozen tree read from YAML plus ``REPLICATION_`` env.

Hand-written rather than generic so that a bad config refuses to start with one message naming the exact field,
the key probably meant and where the value came from (file or variable), never printing a secret. The frozen
dataclasses of the schema are the one source of YAML keys, variable names, defaults and ``example.yaml``. Shape
and defaults follow the reference's "Configuration Reference" and lakeFS's ``blockstore(s)`` sections. One
module per concern (``values``, ``stores``, ``database``, ``sections``, ``model``, ``binder``, ``env``,
``loader``); import from this package, not from the modules.
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
from .values import (
    AUTO,
    ByteRate,
    ByteSize,
    Concurrency,
    Secret,
    format_duration,
    parse_byte_rate,
    parse_byte_size,
    parse_concurrency,
    parse_duration,
    parse_listen_address,
)

__all__ = [
    "AUTO",
    "CONFIG_PATH_ENV",
    "ENV_PREFIX",
    "AuthApiConfig",
    "AuthCacheConfig",
    "AuthConfig",
    "AzureSettings",
    "BlockstoreConfig",
    "BlockstoreType",
    "BlockstoresConfig",
    "ByteRate",
    "ByteSize",
    "CommitSensorConfig",
    "Concurrency",
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
    "parse_byte_rate",
    "parse_byte_size",
    "parse_concurrency",
    "parse_config",
    "parse_duration",
    "parse_listen_address",
    "parse_store",
]
