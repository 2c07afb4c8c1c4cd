"""Shell completion through ``argcomplete``: the shell asks ``lakefs-mirror`` itself at each TAB, so the
completions are the parser's own and never fall behind it."""

from __future__ import annotations

import argparse

__all__ = ["SHELLS", "complete_if_asked", "completion_script"]

#: The shells ``argcomplete`` writes registration scripts for.
SHELLS = ("bash", "zsh", "fish")


def completion_script(shell: str, program: str = "lakefs-mirror") -> str:
    """The script that registers ``program``'s completion in ``shell`` (source it, or save it where the shell
    loads completions from)."""
    import argcomplete

    return str(argcomplete.shellcode([program], shell=shell))


def complete_if_asked(parser: argparse.ArgumentParser) -> None:
    """When the shell's completion function runs the program (``_ARGCOMPLETE`` set), print the completions and
    exit; otherwise return at once."""
    import os

    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser)
