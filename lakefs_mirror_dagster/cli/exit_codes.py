"""The exit statuses of ``lakefs-mirror``, and the one place that says which failure gives which.

Scripts and cron branch on these: a configuration error will not heal by itself, an unavailable lakeFS,
database or store is worth retrying, and a stale mirror is a finding, not a failure of the command.
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode", "exit_code_for", "one_line"]


class ExitCode(enum.IntEnum):
    """Every status the command exits with (docs/cli.md has the same table; a test compares them)."""

    OK = 0
    #: The command ran and part of its work failed (a mirror not synced, damage found and left).
    FAILED = 1
    #: Bad usage or input, or a destructive command refused without ``--yes``: nothing was changed.
    USAGE = 2
    #: The configuration (file, environment, stores) is invalid: fix it, retrying will not help.
    CONFIG = 3
    #: lakeFS, the mirrors database or a store could not be reached or was busy: retry later.
    UNAVAILABLE = 4
    #: Something is left behind: a mirror further behind its source than asked (``status --fail-if-lag``).
    STALE = 5
    #: Stopped by SIGINT (128 + 2).
    INTERRUPTED = 130
    #: Stopped by SIGTERM (128 + 15).
    TERMINATED = 143


def _by_error() -> tuple[tuple[type[BaseException], ExitCode], ...]:
    """Error class -> status, most specific first (the first class the error is an instance of wins). Imported
    when a command fails, not on every start (the rooms behind these classes take a second to import)."""
    from ..config import ConfigError
    from ..errors import LakeFSMirrorError
    from ..lakefs import LakeFSUnavailable
    from ..mirrors import MirrorsDatabaseUnavailable
    from ..storage import StorageConfigError, TransientStorageError

    return (
        (ConfigError, ExitCode.CONFIG),
        (StorageConfigError, ExitCode.CONFIG),
        (LakeFSUnavailable, ExitCode.UNAVAILABLE),
        (MirrorsDatabaseUnavailable, ExitCode.UNAVAILABLE),
        (TransientStorageError, ExitCode.UNAVAILABLE),
        (LakeFSMirrorError, ExitCode.USAGE),
        (OSError, ExitCode.USAGE),
    )


def exit_code_for(exc: BaseException) -> ExitCode | None:
    """The status an expected failure exits with; ``None`` for an unexpected one (a bug: let it raise)."""
    for cls, code in _by_error():
        if isinstance(exc, cls):
            return code
    return None


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (a message quoting a server's or a log's output may span several)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " | ".join(lines) or type(exc).__name__
