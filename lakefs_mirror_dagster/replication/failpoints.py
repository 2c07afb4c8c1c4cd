"""Named crash points for fault-injection tests: ``LAKEFS_MIRROR_FAILPOINT=<name>:<n>`` kills the process
(``os._exit``, like SIGKILL: no cleanup, no flush) the n-th time execution reaches ``<name>``.

Unset, a failpoint costs one dict lookup. It exists so tests can prove that a crash between any two writes
leaves every mirror ref on completely replicated data.
"""

from __future__ import annotations

import os
import threading

__all__ = ["failpoint"]

_ENV = "LAKEFS_MIRROR_FAILPOINT"
_counts: dict[str, int] = {}
_lock = threading.Lock()


def failpoint(name: str) -> None:
    spec = os.environ.get(_ENV)
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    with _lock:
        _counts[name] = _counts.get(name, 0) + 1
        hit = _counts[name] == int(nth or 1)
    if hit:
        os._exit(137)
