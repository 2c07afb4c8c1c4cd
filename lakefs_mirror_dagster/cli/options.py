"""The global options, defined once and accepted before or after the subcommand.

``lakefs-mirror --config x.yaml sync`` and ``lakefs-mirror sync --config x.yaml`` mean the same: the top-level
parser carries the options with their real defaults and every subcommand's parser (a ``CommandParser``, which
argparse uses for each ``add_parser``) carries them again with suppressed defaults, so a value given after the
subcommand wins and a missing one leaves the top-level value alone.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["LOG_LEVELS", "CliParser", "CommandParser", "add_global_options", "log_level_override"]

#: ``--log-level`` choices: the config's ``logging.level`` values.
LOG_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")


def add_global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """``--config``, ``-v``/``-q``/``--log-level`` on ``parser``; with ``suppress`` an option not given sets
    nothing (a subcommand's copy must not reset what was given before the subcommand)."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options (before or after the subcommand)")
    group.add_argument(
        "--config",
        type=Path,
        default=default(None),
        help="replication config YAML (default: $REPLICATION_CONFIG, or env only)",
    )
    level = group.add_mutually_exclusive_group()
    level.add_argument("-v", "--verbose", action="count", default=default(0), help="more log output (-v: DEBUG)")
    level.add_argument(
        "-q", "--quiet", action="count", default=default(0), help="less log output (-q: WARN, -qq: ERROR)"
    )
    level.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=default(None),
        help="the log level, overriding the config's logging.level",
    )


class CliParser(argparse.ArgumentParser):
    """The top-level parser: a usage error is one line naming the command and how to get its help, and exit
    status 2 (argparse's own would print the whole usage block first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class CommandParser(CliParser):
    """A subcommand's parser: argparse creates every ``add_parser`` with the class of the parser it hangs
    from, so each level of subcommands gets the global options without naming them again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_global_options(self, suppress=True)


def log_level_override(args: argparse.Namespace) -> int | None:
    """The log level the command line asks for (``logging`` numbers), or ``None``: the config decides."""
    if args.log_level:
        return logging.WARNING if args.log_level == "WARN" else int(logging.getLevelName(args.log_level))
    if args.verbose:
        return logging.DEBUG
    if args.quiet:
        return logging.WARNING if args.quiet == 1 else logging.ERROR
    return None
