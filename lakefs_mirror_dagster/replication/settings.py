"""The config's knobs as one mirror's engine reads them, apart from the engine so each of its parts can read them."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import AUTO, Concurrency, ReplicationConfig
from ..storage import DEFAULT_MAX_BYTES_IN_FLIGHT

__all__ = ["EngineSettings"]


@dataclass(frozen=True)
class EngineSettings:
    """The config's knobs as the engine reads them (``from_config``)."""

    concurrency: Concurrency = AUTO  # object copies in flight: a number, or "auto" (storage/concurrency.py)
    max_bytes_in_flight: int = DEFAULT_MAX_BYTES_IN_FLIGHT
    max_bytes_per_second: int = 0  # object bytes streamed per second by the whole process (0: no limit)
    strict_full_addresses: bool = False
    list_page_size: int = 1000
    validator_workers: int = 3
    mirror_tags: bool = True
    #: False for ``transfer.mode: external``: objects arrive by the store's replication; only metadata is put.
    copy_objects: bool = True
    log_page_size: int = 1000  # commits per page of the source log the planner reads
    branch_workers: int = 1  # branches of one pass synced at once (branch_workers.py)

    @classmethod
    def from_config(cls, config: ReplicationConfig) -> EngineSettings:
        return cls(
            concurrency=config.transfer.concurrency,
            max_bytes_in_flight=config.transfer.max_bytes_in_flight,
            max_bytes_per_second=config.transfer.max_bytes_per_second,
            strict_full_addresses=config.transfer.strict_full_addresses,
            list_page_size=config.commit_sensor.list_branch_page_size,
            validator_workers=config.validator.num_workers,
            copy_objects=config.transfer.mode == "copy",
            log_page_size=config.commit_sensor.log_commit_page_size,
            branch_workers=config.commit_sensor.branches_scanner_concurrency_limit,
        )
