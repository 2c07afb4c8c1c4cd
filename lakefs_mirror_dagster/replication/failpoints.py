"""Named crash points for fault-injection tests: ``LAKEFS_MIRROR_FAILPOINT=<name>:<n>`` kills the process
(``os._exit``, like SIGKILL: no cleanup, no flush) the n-th time execution reaches ``<name>``.
``<name>:<n>:hold=<path>`` instead holds the thread that reaches it there until the file ``<path>`` exists (at most
``HOLD_MAX_S``), so a test can look at a sync in flight and then let it finish; ``<path>.held`` appears once the
thread is held, the event a test waits for (never a sleep) before it looks or kills.

Unset, a failpoint costs one dict lookup. It exists so tests can prove that a crash between any two writes
leaves every mirror ref on completely replicated data.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

__all__ = ["HOLD_MAX_S", "failpoint", "held_marker"]

#: Longest hold of a ``hold=`` failpoint: a test that never releases it does not hang the process.
HOLD_MAX_S = 120.0

_ENV = "LAKEFS_MIRROR_FAILPOINT"
_counts: dict[str, int] = {}
_lock = threading.Lock()


def held_marker(release: Path) -> Path:
    """The file a ``hold=<release>`` failpoint creates once a thread is held there."""
    return release.with_name(release.name + ".held")


def failpoint(name: str) -> None:
    spec = os.environ.get(_ENV)
    if not spec:
        return
    target, _, rest = spec.partition(":")
    if target != name:
        return
    nth, _, action = rest.partition(":")
    with _lock:
        _counts[name] = _counts.get(name, 0) + 1
        hit = _counts[name] == int(nth or 1)
    if not hit:
        return
    if action.startswith("hold="):
        release, deadline = Path(action.removeprefix("hold=")), time.monotonic() + HOLD_MAX_S
        held_marker(release).touch()
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return
    os._exit(137)
