"""The config's ``logging`` section applied: level and format (text or JSON lines) of the package's log records.

Every entry point (the CLI's commands, ``serve``, the Dagster code location and its run workers) loads its
config through ``load_config_with_logging``, which applies its ``logging`` section at once, so an operator's
``logging.level``/``logging.format`` hold wherever the engine runs. Only the ``lakefs_mirror_dagster`` logger
tree is configured: other libraries' loggers (uvicorn, Dagster, boto) keep their own settings.

Records about one mirror carry its context (``extra=log_fields(mirror=..., repository=...)``), which the JSON
format emits as fields of their own and the text format appends as ``key=value``. Nothing else a record carries
is emitted: a formatter that dumped arbitrary attributes could print a config object or a credential.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from .config import LoggingConfig, ReplicationConfig, load_config

__all__ = [
    "CONTEXT_FIELDS",
    "PACKAGE_LOGGER",
    "JsonLinesFormatter",
    "TextFormatter",
    "configure_logging",
    "load_config_with_logging",
    "log_fields",
    "override_level",
]

PACKAGE_LOGGER = "lakefs_mirror_dagster"
#: The context a record may carry, in the order both formats show it.
CONTEXT_FIELDS = ("region", "mirror", "repository", "branch", "commit")


def log_fields(
    *,
    region: str | None = None,
    mirror: str | None = None,
    repository: str | None = None,
    branch: str | None = None,
    commit: str | None = None,
) -> dict[str, str]:
    """The ``extra=`` of a record about a mirror (``None`` values are left out), e.g.
    ``log.info("...", extra=log_fields(mirror=m.name, repository=m.source_repository))``."""
    given = {"region": region, "mirror": mirror, "repository": repository, "branch": branch, "commit": commit}
    return {key: str(value) for key, value in given.items() if value is not None}


def _context(record: logging.LogRecord) -> dict[str, str]:
    """The record's context fields as text (``str()``, so a ``Secret`` shows redacted)."""
    found = {key: getattr(record, key, None) for key in CONTEXT_FIELDS}
    return {key: str(value) for key, value in found.items() if value is not None and value != ""}


def _utc_time(record: logging.LogRecord) -> str:
    """ISO 8601 in UTC with milliseconds: sortable, and the same in every region."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger>: <message> [key=value ...]``, one line per record (plus a traceback, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(f"{key}={value}" for key, value in _context(record).items())
        line = f"{_utc_time(record)} {record.levelname} {record.name}: {record.getMessage()}"
        line = f"{line} [{context}]" if context else line
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        elif record.exc_text:
            line = f"{line}\n{record.exc_text}"
        return line


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: ``time``, ``level``, ``logger``, ``message``, the context fields it carries,
    and ``exception`` (the traceback as text) when there is one. Only these keys, only strings."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": _utc_time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_context(record),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            doc["exception"] = record.exc_text
        return json.dumps(doc, ensure_ascii=False)


#: The level the command line asked for (``-v``/``-q``/``--log-level``); wins over ``logging.level``.
_level_override: int | None = None


def override_level(level: int | None) -> None:
    """Make every later ``configure_logging`` use ``level`` instead of the config's (``None``: the config's
    again). The CLI sets it once, before a command loads its config, whichever code path loads it."""
    global _level_override
    _level_override = level
    logger = logging.getLogger(PACKAGE_LOGGER)
    if level is not None and any(isinstance(h, _PackageHandler) for h in logger.handlers):
        logger.setLevel(level)


class _PackageHandler(logging.StreamHandler[TextIO]):
    """The handler ``configure_logging`` installs (its class marks it, so that a second call replaces it)."""


def configure_logging(settings: LoggingConfig, *, stream: TextIO | None = None) -> logging.Handler:
    """Apply ``settings`` to the package's loggers: their level, and one handler writing to ``stream``
    (standard error) in the configured format. Calling it again replaces the handler; returns it.

    The package logger stops propagating to the root logger, so a record is printed once, in one format, also
    where the root logger has handlers of its own. Dagster still captures these records when ``dagster.yaml``
    lists ``lakefs_mirror_dagster`` under ``python_logs.managed_python_loggers``.
    """
    logger = logging.getLogger(PACKAGE_LOGGER)
    for old in [h for h in logger.handlers if isinstance(h, _PackageHandler)]:
        logger.removeHandler(old)
    handler = _PackageHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonLinesFormatter() if settings.format == "json" else TextFormatter())
    logger.addHandler(handler)
    logger.setLevel(settings.python_level if _level_override is None else _level_override)
    logger.propagate = False
    return handler


def load_config_with_logging(path: str | Path | None = None) -> ReplicationConfig:
    """The config at ``path`` (``None``: ``$LAKEFS_MIRROR_CONFIG`` or the default file), its ``logging``
    section applied to this process: the one way every entry point loads its config."""
    config = load_config(path)
    configure_logging(config.logging)
    return config
