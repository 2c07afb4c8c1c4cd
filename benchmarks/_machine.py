"""The shared machine the benchmarks run on: its load beside every figure, waiting until it is quiet, the CPU each
server used, and rates."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakefs_mirror_devenv import Environment

__all__ = [
    "cpu_delta",
    "format_rate",
    "machine_load",
    "server_cpu",
    "wait_until_quiet",
]


def machine_load() -> str:
    """Load averages and core count, to print beside every figure (the machine is shared)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _cpu_times() -> tuple[int, int]:
    """Idle and total jiffies of all cores so far (``/proc/stat``'s first line; idle counts iowait too)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)


def wait_until_quiet(*, idle: float = 0.8, window_s: float = 1.0, max_s: float = 90.0) -> str:
    """Wait until the cores were ``idle`` (a fraction) over one ``window_s``, at most ``max_s``; what was waited.

    After a large backfill, MinIO and lakeFS go on working for a while (MinIO's scanner, lakeFS's caches); a
    pass timed then is charged for it. The load average lags by a minute, so idle time is sampled instead.
    Where ``/proc/stat`` is missing (not Linux) nothing is waited."""
    if not os.path.exists("/proc/stat"):
        return "not waited (no /proc/stat)"
    started = time.monotonic()
    seen = 0.0
    while True:
        idle0, total0 = _cpu_times()
        time.sleep(window_s)
        idle1, total1 = _cpu_times()
        seen = (idle1 - idle0) / max(1, total1 - total0)
        waited = time.monotonic() - started
        if seen >= idle or waited >= max_s:
            quiet = "quiet" if seen >= idle else f"not quiet after {max_s:.0f}s"
            return f"waited {waited:.1f}s, {seen:.0%} idle over the last {window_s:.0f}s ({quiet})"


def format_rate(nbytes: int, seconds: float) -> str:
    return f"{nbytes / 1e6 / seconds:8.1f} MB/s" if seconds > 0 else "     inf MB/s"


def _proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc (0.0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid``'s live children and of those it reaped (a PostgreSQL server's backends)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return total
    return total + (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def server_cpu(env: Environment) -> dict[str, float]:
    """CPU seconds used so far by each server of ``env`` (``lakefs:<region>``, ``minio:<name>``, ``toxiproxy``,
    ``postgres`` with its backends); the difference of two readings says which server a step kept busy."""
    cpu = {f"lakefs:{name}": _proc_cpu_seconds(r.pid) for name, r in env.regions.items()}
    cpu.update({f"minio:{name}": _proc_cpu_seconds(m.pid) for name, m in env.minio.items()})
    if env.toxiproxy is not None:  # the link's proxy (benchmarks/wan.py): its own CPU beside the figures
        cpu["toxiproxy"] = _proc_cpu_seconds(env.toxiproxy.pid)
    if env.postgres:  # a lakeFS's database or the mirrors database: every connection is a process of its own
        pid = int(env.postgres["pid"])
        cpu["postgres"] = _proc_cpu_seconds(pid) + _children_cpu_seconds(pid)
    return cpu


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after}
