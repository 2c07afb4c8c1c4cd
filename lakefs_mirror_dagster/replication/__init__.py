"""The mirroring engine: plan, transfer, validate, promote (free of Dagster, usable alone)."""

from .engine import (
    EngineSettings,
    MirrorEngine,
    RangeTransferer,
    RangeValidator,
    ReplicationError,
    ValidatedCache,
    in_process_validator,
)
from .results import MirrorSyncResult, RefResult, TransferStats
from .service import ReplicationService
from .source import ApiObjectReader, RepositorySource
from .validation import RangeValidation, metadata_uri, read_metarange, validate_range

__all__ = [
    "ApiObjectReader",
    "EngineSettings",
    "MirrorEngine",
    "MirrorSyncResult",
    "RangeTransferer",
    "RangeValidation",
    "RangeValidator",
    "RefResult",
    "ReplicationError",
    "ReplicationService",
    "RepositorySource",
    "TransferStats",
    "ValidatedCache",
    "in_process_validator",
    "metadata_uri",
    "read_metarange",
    "validate_range",
]
