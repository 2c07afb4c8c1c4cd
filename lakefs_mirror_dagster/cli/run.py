"""``main``: parse, apply ``-v``/``-q``, ask before destroying, run the command, map its failure to an exit status."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .completion import complete_if_asked
from .confirm import confirm_destruction
from .exit_codes import exit_code_for, one_line
from .options import log_level_override
from .parser import build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. An expected failure is one line on stderr and the exit status its class maps to
    (``cli.exit_codes``), never a traceback; a destructive command asks first (``--yes``)."""
    from ..config import ConfigError

    parser = build_parser()
    complete_if_asked(parser)
    args = parser.parse_args(argv)
    level = log_level_override(args)
    if level is not None:  # before any command loads its config: the command line wins over logging.level
        from ..config import LoggingConfig
        from ..logs import configure_logging, override_level

        override_level(level)
        configure_logging(LoggingConfig())
    try:
        confirm_destruction(args)
        return int(args.func(args))
    except Exception as exc:
        code = exit_code_for(exc)
        if code is None:
            raise
        topic = "config: " if isinstance(exc, ConfigError) else ""
        print(f"lakefs-mirror: {topic}{one_line(exc)}", file=sys.stderr)
        return code
