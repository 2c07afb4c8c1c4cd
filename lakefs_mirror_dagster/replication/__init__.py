"""The mirroring engine: plan, transfer, validate, promote (free of Dagster, usable alone)."""

from .engine import (
    EngineSettings,
    MirrorEngine,
    MirrorRefMoved,
    RangeTransferer,
    RangeValidator,
    ReplicationError,
    ValidatedCache,
    in_process_validator,
)
from .results import MirrorSyncResult, RefResult, TransferStats
from .service import RETIRING, ReplicationService
from .source import ApiObjectReader, RepositorySource
from .storages import StorageDescription, describe_storages, missing_stores
from .validation import RangeValidation, metadata_uri, read_metarange, validate_range

__all__ = [
    "RETIRING",
    "ApiObjectReader",
    "EngineSettings",
    "MirrorEngine",
    "MirrorRefMoved",
    "MirrorSyncResult",
    "RangeTransferer",
    "RangeValidation",
    "RangeValidator",
    "RefResult",
    "ReplicationError",
    "ReplicationService",
    "RepositorySource",
    "StorageDescription",
    "TransferStats",
    "ValidatedCache",
    "describe_storages",
    "in_process_validator",
    "metadata_uri",
    "missing_stores",
    "read_metarange",
    "validate_range",
]
