"""The service's smaller sections: auth, the lakeFS credentials, the lakeFS front, logging, the sensors,
freshness, the validator, object transfer, Spark and the replication of garbage-collection deletions."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from .errors import _FieldError, _Parts
from .values import (
    AUTO,
    ByteRate,
    ByteSize,
    Concurrency,
    GiB,
    MiB,
    Secret,
    _at_least,
    _between,
    _duration_within,
    _listen_address,
    _meta,
    _nonempty,
    _optional_path,
    _positive_duration,
)

__all__ = [
    "DEFAULT_MAX_BYTES_IN_FLIGHT",
    "AuthApiConfig",
    "AuthCacheConfig",
    "AuthConfig",
    "CommitSensorConfig",
    "EncryptConfig",
    "FreshnessConfig",
    "GarbageCollectionConfig",
    "HooksConfig",
    "LakeFSCredentials",
    "LakeFSFrontConfig",
    "LoggingConfig",
    "MetricsConfig",
    "MirrorsManagerConfig",
    "SparkConfig",
    "TLSConfig",
    "TransferConfig",
    "ValidatorConfig",
]


@dataclass(frozen=True, kw_only=True)
class EncryptConfig:
    """``auth.encrypt``; the key must equal the lakeFS installation's ``auth.encrypt.secret_key``."""

    secret_key: Secret = field(metadata=_meta(_nonempty))


def _no_auth_service(value: str) -> str:
    if value:
        raise ValueError(
            "not supported: this service authenticates API callers against the region's lakeFS itself (which "
            "uses its own auth.api if it has one); leave it empty"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class AuthApiConfig:
    """``auth.api``: in lakeFS, an external auth service. Here it must stay empty: this service checks API
    callers against the region's lakeFS itself, which uses whatever auth that lakeFS is configured with."""

    endpoint: str = field(default="", metadata=_meta(_no_auth_service))


@dataclass(frozen=True, kw_only=True)
class AuthCacheConfig:
    """``auth.cache``; size and TTL default to lakeFS's own auth cache defaults (1024 entries, 20s)."""

    enabled: bool = False
    size: int = field(default=1024, metadata=_meta(_at_least(1)))
    ttl: timedelta = field(default=timedelta(seconds=20), metadata=_meta(_positive_duration))


@dataclass(frozen=True, kw_only=True)
class AuthConfig:
    """``auth``: how the service API checks the callers' lakeFS credentials."""

    encrypt: EncryptConfig
    api: AuthApiConfig = field(default_factory=AuthApiConfig)
    cache: AuthCacheConfig = field(default_factory=AuthCacheConfig)
    #: ``serve``'s RBAC policies file (``serve --policies`` overrides it); empty: every authenticated user of the
    #: region may do everything (logged loudly at start). Read when ``serve`` starts, not when the config loads.
    policies_file: str = field(default="", metadata=_meta(_optional_path))


@dataclass(frozen=True, kw_only=True)
class TLSConfig:
    """``tls``: ``serve`` speaks HTTPS with this PEM certificate (chain) and key (``serve --tls-cert/--tls-key``
    override them). Both or neither; the files are read when ``serve`` starts (a bad one is refused there)."""

    cert_file: str = field(default="", metadata=_meta(_optional_path))
    key_file: str = field(default="", metadata=_meta(_optional_path))

    def _validate(self, parts: _Parts) -> None:
        if self.cert_file and not self.key_file:
            raise _FieldError((*parts, "key_file"), "required when tls.cert_file is set (HTTPS needs both)")
        if self.key_file and not self.cert_file:
            raise _FieldError((*parts, "cert_file"), "required when tls.key_file is set (HTTPS needs both)")

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)


_PYTHON_LEVELS = {
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
}


@dataclass(frozen=True, kw_only=True)
class LoggingConfig:
    """``logging``: level (``WARNING`` is accepted for ``WARN``) and ``text`` or ``json`` format."""

    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"

    @property
    def python_level(self) -> int:
        """The ``logging`` module's number for ``level``."""
        return _PYTHON_LEVELS[self.level]


@dataclass(frozen=True, kw_only=True)
class CommitSensorConfig:
    """``commit_sensor``: how often and how widely source branches are scanned for new commits."""

    process_branches_duration: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_positive_duration))
    branches_scanner_concurrency_limit: int = field(default=10, metadata=_meta(_at_least(1)))
    list_branch_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))
    log_commit_page_size: int = field(default=1000, metadata=_meta(_at_least(1)))


@dataclass(frozen=True, kw_only=True)
class FreshnessConfig:
    """``freshness``: how far behind its source head a mirror branch may fall before its ``fresh`` check fails
    (Dagster; ``status --fail-if-lag`` takes its threshold on the command line)."""

    max_behind: timedelta = field(default=timedelta(minutes=30), metadata=_meta(_positive_duration))


@dataclass(frozen=True, kw_only=True)
class MirrorsManagerConfig:
    """``mirrors_manager``: how often mirror definitions are reconciled with the destinations."""

    process_mirrors_interval_duration: timedelta = field(
        default=timedelta(seconds=20), metadata=_meta(_positive_duration)
    )


@dataclass(frozen=True, kw_only=True)
class ValidatorConfig:
    """``validator``: checks that everything a commit references is at the destination before promotion."""

    run_interval: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_positive_duration))
    num_workers: int = field(default=3, metadata=_meta(_at_least(1)))
    cooldown_on_missing: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_at_least(timedelta(0))))
    cooldown_on_error: timedelta = field(default=timedelta(minutes=1), metadata=_meta(_at_least(timedelta(0))))


@dataclass(frozen=True, kw_only=True)
class LakeFSCredentials:
    """The replication user's lakeFS access key (same on every installation, per the reference)."""

    access_key_id: str = ""
    secret_access_key: Secret = field(default_factory=Secret)

    def _validate(self, parts: _Parts) -> None:
        if self.access_key_id and not self.secret_access_key:
            raise _FieldError((*parts, "secret_access_key"), "required when access_key_id is set")
        if self.secret_access_key and not self.access_key_id:
            raise _FieldError((*parts, "access_key_id"), "required when secret_access_key is set")

    @property
    def is_set(self) -> bool:
        return bool(self.access_key_id)


@dataclass(frozen=True, kw_only=True)
class LakeFSFrontConfig:
    """``lakefs_front``: when enabled, ``serve`` also fronts this region's lakeFS (``regional_endpoint``):
    every request but the service's own (``/service/replication/...``, ``/_health``) passes through to it, so
    the lakeFS API, its S3 gateway and the replication API share one address, as the reference's curl
    commands assume. ``timeout`` bounds each wait for lakeFS to accept or send the next bytes (connecting: at
    most 10 s of it)."""

    enabled: bool = False
    timeout: timedelta = field(default=timedelta(minutes=5), metadata=_meta(_positive_duration))


#: Bytes buffered by all streamed copies of one engine at once (``storage/budget.py``): what bounds memory.
#: Measured: 20 x 64 MiB and one 2 GiB object copied with the defaults peak below 512 MiB RSS
#: (``benchmarks/peak_rss.py --case large20`` / ``--case huge``).
DEFAULT_MAX_BYTES_IN_FLIGHT = 256 * MiB


def _listeners(value: int) -> int:
    if not 1 <= value <= 4:
        raise ValueError(f"must be between 1 and 4 (each one holds a thread of the sensor daemon), got {value}")
    return value


@dataclass(frozen=True, kw_only=True)
class HooksConfig:
    """``hooks``: event-driven sync. When enabled, ``serve`` accepts lakeFS action webhooks (post-commit, post-merge,
    branch and tag creation and deletion) and queues a wake-up per ref in the mirrors database; ``sync`` reads its
    region's queue every ``poll_interval`` between its full passes and syncs the named refs at once, and the Dagster
    hooks sensor requests their runs. ``secret``: when set, a hook must send it (header ``X-Lakefs-Mirror-Secret``
    or query parameter ``secret``); without it the endpoint answers 401. ``sensor_wait``: how long a tick of the
    Dagster commit sensor keeps reading the queue (every ``poll_interval``) before it gives up, since Dagster's
    sensor daemon starts ticks at most every 5 s whatever the sensor's interval; 0 reads it once.
    ``sensor_listeners``: how many Dagster sensors of each mirror wait for hooks at once (the commit sensor and
    ``sensor_listeners - 1`` hooks sensors). With more than one, a wake-up goes to whichever tick claims it first
    while the others keep waiting, and they take turns waiting across the daemon's next loop (up to
    ``sensor_wait``), so some tick is waiting whenever a hook comes; each run key is requested by one sensor only."""

    enabled: bool = False
    secret: Secret = field(default_factory=Secret)
    poll_interval: timedelta = field(
        default=timedelta(milliseconds=200), metadata=_meta(_at_least(timedelta(milliseconds=50)))
    )
    sensor_wait: timedelta = field(
        default=timedelta(0),
        metadata=_meta(_duration_within(timedelta(0), timedelta(seconds=30), "a sensor tick times out at 60 s")),
    )
    sensor_listeners: int = field(default=1, metadata=_meta(_listeners))


def _optional_listen_address(value: str) -> str:
    return value if value == "" else _listen_address(value)


@dataclass(frozen=True, kw_only=True)
class MetricsConfig:
    """``metrics``: Prometheus metrics. ``serve`` always answers ``GET /metrics`` on its own address; the ``sync``
    loop serves them on ``listen_address`` (``host:port``; ``sync --metrics-listen`` overrides it), or not at all
    when it is empty (the default)."""

    listen_address: str = field(default="", metadata=_meta(_optional_listen_address))


@dataclass(frozen=True, kw_only=True)
class TransferConfig:
    """``transfer``: how objects and metadata files are moved (``copy``) or awaited (``external``). ``concurrency``:
    object copies in flight per engine, exactly that many, or ``auto`` (the default): as many as the source reads'
    round trip calls for (``storage/concurrency.py``), within ``max_bytes_in_flight`` of buffers either way."""

    concurrency: Concurrency = AUTO
    max_bytes_in_flight: ByteSize = field(default=DEFAULT_MAX_BYTES_IN_FLIGHT, metadata=_meta(_at_least(MiB)))
    multipart_threshold: ByteSize = field(
        default=128 * MiB, metadata=_meta(_between(1, 5 * GiB, "S3 single uploads stop at 5 GiB"))
    )
    multipart_chunk_size: ByteSize = field(
        default=16 * MiB, metadata=_meta(_between(5 * MiB, 5 * GiB, "S3 parts are 5 MiB to 5 GiB"))
    )
    strict_full_addresses: bool = False
    mode: Literal["copy", "external"] = "copy"
    #: Object bytes one process streams per second, shared by its branch workers and threads (0: no limit).
    max_bytes_per_second: ByteRate = 0


@dataclass(frozen=True, kw_only=True)
class SparkConfig:
    """``spark``: the session used for distributed validation (and, when enabled, object transfer);
    ``conf`` values are passed as strings. Transfers of fewer than ``transfer_threshold_objects`` objects
    stay in-process: below it Spark's scheduling costs more than it saves (``benchmarks/transfer_paths.py``)."""

    master: str = field(default="local[*]", metadata=_meta(_nonempty))
    conf: Mapping[str, str] = field(default_factory=dict, metadata=_meta(stringify=True))
    transfer_enabled: bool = False
    # Measured crossover on a loaded 2-core machine, local[2]: ~5,750 objects (benchmarks/transfer_paths.py).
    transfer_threshold_objects: int = field(default=6000, metadata=_meta(_at_least(0)))
    transfer_max_partitions: int = field(default=8, metadata=_meta(_at_least(1)))
    validation_threshold_ranges: int = field(default=16, metadata=_meta(_at_least(0)))


_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,?#-]+$")


def _cron(value: str) -> str:
    fields = value.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise ValueError(f"must be a cron expression of five fields (minute hour day month weekday), got {value!r}")
    return " ".join(fields)


@dataclass(frozen=True, kw_only=True)
class GarbageCollectionConfig:
    """``garbage_collection``: objects lakeFS garbage collection deleted from a source's namespace are deleted
    from its mirrors' namespaces once they have been missing at the source for ``grace_period`` (a listing
    glitch, or an object that comes back, is never deleted). ``cron_schedule`` is the Dagster schedule's."""

    grace_period: timedelta = field(default=timedelta(hours=24), metadata=_meta(_positive_duration))
    cron_schedule: str = field(default="0 3 * * *", metadata=_meta(_cron))
