"""What the Spark paths raise when Spark itself fails (a task crashed, a result went missing)."""

from __future__ import annotations

from ..errors import LakeFSMirrorError

__all__ = ["SparkTransferError", "SparkValidationError"]


class SparkTransferError(LakeFSMirrorError, RuntimeError):
    """Spark could not transfer a batch of ranges (a task crashed, or a range file was unreadable)."""


class SparkValidationError(LakeFSMirrorError, RuntimeError):
    """Spark returned no validation for some ranges: they must not read as valid."""
