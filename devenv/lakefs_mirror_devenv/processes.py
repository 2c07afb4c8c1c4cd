"""Starting, probing and stopping local server processes, bounded in time.

Every server the dev environment starts binds 127.0.0.1 on a free port, logs to a file, and is stopped by
the pid we recorded, so ``devenv down`` never touches a process it did not start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from lakefs_mirror_dagster.errors import LakeFSMirrorError

__all__ = [
    "DevenvError",
    "free_port",
    "pid_alive",
    "start_process",
    "stop_pid",
    "wait_http_ok",
]


class DevenvError(LakeFSMirrorError, RuntimeError):
    """A dev-environment step failed; the message says which and where its log is."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_process(
    argv: Sequence[str],
    *,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start a server in its own session so it survives our exit and can be stopped as a group."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
        )


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def wait_http_ok(
    url: str | urllib.request.Request,
    *,
    timeout_s: float,
    process: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
) -> float:
    """Poll ``url`` (or send a ``Request``, e.g. a POST) until it answers 2xx; returns the seconds waited.

    Fails fast when the process dies, quoting the end of its log, instead of waiting the whole timeout.
    """
    shown = url.full_url if isinstance(url, urllib.request.Request) else url
    start = time.monotonic()
    deadline = start + timeout_s
    last_error = ""
    for _ in range(int(timeout_s / 0.1) + 1):
        if process is not None and process.poll() is not None:
            raise DevenvError(f"process exited with code {process.returncode} before {shown} answered{_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if 200 <= resp.status < 300:
                    return time.monotonic() - start
        except (urllib.error.URLError, OSError) as exc:
            last_error = str(exc)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    raise DevenvError(f"{shown} did not answer within {timeout_s:.0f}s ({last_error}){_tail(log_path)}")


def stop_pid(pid: int, *, timeout_s: float = 15.0, sig: signal.Signals = signal.SIGTERM) -> None:
    """Signal the process group we started (SIGTERM by default), then SIGKILL it if it outlives ``timeout_s``."""
    if not pid_alive(pid):
        return
    _signal_group(pid, sig)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            _reap(pid)
            return
        time.sleep(0.1)
    _signal_group(pid, signal.SIGKILL)
    for _ in range(50):
        if not pid_alive(pid):
            break
        time.sleep(0.1)
    _reap(pid)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _tail(log_path: Path | None, lines: int = 15) -> str:
    if log_path is None or not log_path.exists():
        return ""
    text = log_path.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- last lines of {log_path} ---\n" + "\n".join(text)
