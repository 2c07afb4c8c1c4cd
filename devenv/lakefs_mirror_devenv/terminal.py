"""Running a command as an operator's shell would, on a pseudo-terminal, and reading back what it drew.

A live display (``rich``) draws only when its output is a terminal, so the tests and the progress benchmark
run the CLI here. Every chunk the terminal received is kept with the second it arrived, so a caller can show
the screen as it was at any moment of a long run.
"""

from __future__ import annotations

import codecs
import os
import pty
import re
import select
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["TerminalRun", "run_in_terminal"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class TerminalRun:
    """A finished run: its exit code and every chunk the terminal received, with seconds since the start."""

    returncode: int
    chunks: list[tuple[float, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Everything drawn, with the cursor moves and colours left out."""
        return _ANSI.sub("", "".join(chunk for _, chunk in self.chunks))

    def screen_at(self, seconds: float) -> str:
        """The last line drawn by ``seconds`` after the start (a live display redraws its line in place)."""
        drawn = _ANSI.sub("", "".join(chunk for at, chunk in self.chunks if at <= seconds))
        lines = [line.strip() for line in re.split(r"[\r\n]", drawn) if line.strip()]
        return lines[-1] if lines else ""

    def first_seconds(self, pattern: str) -> float | None:
        """When text matching ``pattern`` first appeared on the screen (None if it never did)."""
        drawn = ""
        for at, chunk in self.chunks:
            drawn += _ANSI.sub("", chunk)
            if re.search(pattern, drawn):
                return at
        return None


def run_in_terminal(
    argv: Sequence[str], *, env: Mapping[str, str], timeout_s: float, cwd: str | None = None
) -> TerminalRun:
    """Run ``argv`` with stdout and stderr on a new pseudo-terminal until it exits; killed after ``timeout_s``."""
    leader, follower = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv), stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=dict(env), cwd=cwd
    )
    os.close(follower)
    run = TerminalRun(returncode=-1)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character may span two reads
    deadline = started + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # the terminal closed: the process is done
                    break
                if not data:
                    break
                run.chunks.append((time.monotonic() - started, decoder.decode(data)))
            elif proc.poll() is not None:
                break
        run.returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return run
