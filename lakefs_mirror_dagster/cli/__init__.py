"""``lakefs-mirror``, the command line over the same library the Dagster code location uses: one room.

``run.main`` parses (``parser``: one module per noun — ``sync``, ``maintenance`` (scrub, gc), ``mirrors``,
``refs``, ``status`` (and serve), ``dev``), then runs the command. The habits every command shares are defined
once: exit statuses (``exit_codes``), global options (``options``), ``--yes`` (``confirm``), tables (``tables``),
a mirror named by name or id (``mirror_arg``), shell completion (``completion``), the live progress display
(``progress_display``).
"""

from __future__ import annotations

from .confirm import Refused, add_yes_option, confirm_destruction
from .exit_codes import ExitCode, exit_code_for, one_line
from .mirror_arg import resolve_mirror
from .options import CliParser, CommandParser, add_global_options, log_level_override
from .parser import build_parser, version
from .run import main
from .tables import format_table

__all__ = [
    "CliParser",
    "CommandParser",
    "ExitCode",
    "Refused",
    "add_global_options",
    "add_yes_option",
    "build_parser",
    "confirm_destruction",
    "exit_code_for",
    "format_table",
    "log_level_override",
    "main",
    "one_line",
    "resolve_mirror",
    "version",
]
