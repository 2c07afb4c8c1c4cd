"""A child process run to completion, with its own resource usage read exactly (``wait4``)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass

from _tree import REPO_ROOT

__all__ = [
    "ChildRun",
    "run_child",
]


@dataclass
class ChildRun:
    """A finished child process: exit code, output, wall time and its own resource usage (from ``wait4``)."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    #: ``ru_maxrss``: includes the parent's RSS the child had until its ``exec`` (see ``sync_in_child``).
    peak_rss_bytes: int
    cpu_seconds: float


def run_child(
    argv: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 3600.0, what: str = "child"
) -> ChildRun:
    """Run ``argv`` to completion and read exactly its rusage (peak RSS, user + system CPU) with ``wait4``;
    killed after ``timeout_s``."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT, env=env)
    output: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda k=k, s=s: output.__setitem__(k, s.read()), daemon=True)
        for k, s in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            raise TimeoutError(f"{what} did not finish within {timeout_s:.0f}s")
        time.sleep(0.05)
    seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join(timeout=10)
    return ChildRun(
        returncode=proc.returncode,
        stdout=output.get("out", b"").decode(errors="replace"),
        stderr=output.get("err", b"").decode(errors="replace"),
        seconds=seconds,
        peak_rss_bytes=usage.ru_maxrss * 1024,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
    )
