"""``--yes`` for the commands that delete or irreversibly change something.

Without ``--yes`` the command asks on a terminal; with no terminal to ask (cron, CI, a pipe) it refuses before
it changes anything, so a script has to say ``--yes`` on purpose.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TextIO

from ..errors import LakeFSMirrorError

__all__ = ["Refused", "add_yes_option", "confirm_destruction"]

#: Describes what a command is about to destroy, from its arguments (``None``: nothing, e.g. a dry run).
Describe = Callable[[argparse.Namespace], "str | None"]


class Refused(LakeFSMirrorError):
    """A destructive command was not confirmed: nothing was changed."""


def add_yes_option(parser: argparse.ArgumentParser, describe: Describe) -> None:
    """Make ``parser``'s command ask before it runs; ``describe`` says what it would destroy."""
    parser.add_argument("-y", "--yes", action="store_true", help="do it without asking (needed without a terminal)")
    parser.set_defaults(destroys=describe)


def confirm_destruction(args: argparse.Namespace, *, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
    """Return when the command may go on; raise ``Refused`` otherwise."""
    describe: Describe | None = getattr(args, "destroys", None)
    what = describe(args) if describe else None
    if what is None or getattr(args, "yes", False):
        return
    stdin = sys.stdin if stdin is None else stdin
    stderr = sys.stderr if stderr is None else stderr
    if not stdin.isatty():
        raise Refused(f"refusing to {what} without confirmation: no terminal to ask on; pass --yes")
    stderr.write(f"lakefs-mirror: this will {what}. Continue? [y/N] ")
    stderr.flush()
    if stdin.readline().strip().lower() not in ("y", "yes"):
        raise Refused(f"not confirmed: did not {what}")
