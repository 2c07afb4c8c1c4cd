"""Keep the demo's console to its own lines: what other code writes to stderr goes to a log file instead.

Dagster's sensor logs, Spark's JVM (it writes to the file descriptor it inherits, not to ``sys.stderr``) and its
Python workers, and Python warnings all write to stderr; the demo prints its own lines on stdout. So stderr is
pointed at the log file, at the descriptor and in ``sys``, while the demo runs. A failure must still say why: if
the block raises, the end of the log is shown on the real stderr before the error goes on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["stderr_to"]


@contextmanager
def stderr_to(log_path: Path, *, tail_lines: int = 30) -> Iterator[Path]:
    """Send stderr (descriptor 2, inherited by child processes, and ``sys.stderr``) to ``log_path`` (appended).

    On an exception the last ``tail_lines`` lines of the log are printed on the restored stderr.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved_stream, saved_fd = sys.stderr, os.dup(2)
    failed = False
    try:
        with open(log_path, "a", buffering=1, encoding="utf-8", errors="replace") as log:
            os.dup2(log.fileno(), 2)
            sys.stderr = log
            try:
                yield log_path
            except BaseException:
                failed = True
                raise
            finally:
                log.flush()
                sys.stderr = saved_stream
                os.dup2(saved_fd, 2)
    finally:
        os.close(saved_fd)
        if failed:
            _show_tail(log_path, tail_lines)


def _show_tail(log_path: Path, lines: int) -> None:
    try:
        tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    except OSError:
        return
    if tail:
        print(f"[demo] failed; the last lines of {log_path}:", *tail, sep="\n", file=sys.stderr, flush=True)
