"""The ``lakefs-mirror`` parser: the global options, then each noun's commands (one module per noun)."""

from __future__ import annotations

import argparse

from .dev import add_dev_commands
from .maintenance import add_maintenance_commands
from .mirrors import add_mirrors_commands
from .options import CliParser, CommandParser, add_global_options
from .status import add_status_commands
from .sync import add_sync_command

__all__ = ["build_parser", "version"]

DESCRIPTION = "``lakefs-mirror``: the command line over the same library the Dagster code location uses."

_EPILOG = (
    "Exit status: 0 ok, 1 part of the work failed, 2 usage error or refused, 3 configuration error, "
    "4 lakeFS/database/store unavailable (retry), 5 stale (status --fail-if-lag), 130/143 stopped by "
    "SIGINT/SIGTERM. Global options go before or after the subcommand."
)


def version() -> str:
    """The installed distribution's version (what pip installed, which a bug report needs); the package's own
    ``__version__`` where it runs from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("lakefs-mirror-dagster")
    except PackageNotFoundError:
        from .. import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(prog="lakefs-mirror", description=DESCRIPTION, epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"lakefs-mirror {version()}")
    add_global_options(parser, suppress=False)
    # Every parser below is a CommandParser (argparse's default for add_parser is its parent's class): each
    # repeats the global options, so they are accepted after the subcommand too.
    sub = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    add_sync_command(sub)
    add_maintenance_commands(sub)
    add_mirrors_commands(sub)
    add_status_commands(sub)
    add_dev_commands(sub)
    return parser
