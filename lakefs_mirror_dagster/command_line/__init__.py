"""The habits of the ``lakefs-mirror`` command line, kept apart from its commands (``cli.py``).

One definition each of: the exit statuses and which error gives which (``exit_codes``), the global options
accepted before or after the subcommand (``options``), the ``--yes`` of destructive commands (``confirm``), the
human tables beside ``--json`` (``tables``), a mirror named by name or id (``mirror_arg``) and the shell
completion scripts (``completion``).
"""

from __future__ import annotations

from .confirm import Refused, add_yes_option, confirm_destruction
from .exit_codes import ExitCode, exit_code_for, one_line
from .mirror_arg import resolve_mirror
from .options import CliParser, CommandParser, add_global_options, log_level_override
from .tables import format_table

__all__ = [
    "CliParser",
    "CommandParser",
    "ExitCode",
    "Refused",
    "add_global_options",
    "add_yes_option",
    "confirm_destruction",
    "exit_code_for",
    "format_table",
    "log_level_override",
    "one_line",
    "resolve_mirror",
]
