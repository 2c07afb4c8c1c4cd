"""Stopping and restarting one server of a dev environment on the same port with the same data.

Fault-injection tests kill a lakeFS region, a MinIO server or the PostgreSQL mirrors database in the middle
of a sync and bring it back; everything that talks to it (configs, clients, the mirrors database URL) must
keep working unchanged, so a restart reuses the port, the data directory and the credentials. The
environment's state file is updated with the new pid, so ``stop_environment``/``devenv down`` still stop
exactly what is running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.parse
from dataclasses import replace
from pathlib import Path

from .build import ensure_lakefs_binary, ensure_minio_binary
from .processes import DevenvError, free_port, pid_alive, start_process, stop_pid, wait_http_ok
from .state import Environment

__all__ = ["SERVER_KINDS", "restart_server", "start_server", "stop_server"]

#: What can be restarted: a lakeFS region, a MinIO server (by name), or the environment's PostgreSQL.
SERVER_KINDS = ("lakefs", "minio", "postgres")

_START_TIMEOUT_S = 120.0
_STOP_TIMEOUT_S = 15.0


def stop_server(env: Environment, kind: str, name: str = "", *, sig: signal.Signals = signal.SIGKILL) -> int:
    """Stop one server's whole process group with ``sig`` (SIGKILL by default: a crash); returns its pid.

    The server's command line is recorded first, so ``start_server`` can start it exactly as it was.
    """
    pid = _pid_of(env, kind, name)
    if kind == "postgres":
        assert env.postgres is not None
        if "argv" not in env.postgres:
            env.postgres["argv"] = _cmdline(pid)
            env.save()
    if not pid_alive(pid):
        return pid
    stop_pid(pid, sig=sig, timeout_s=_STOP_TIMEOUT_S)
    if pid_alive(pid):
        raise DevenvError(f"{kind} {name or ''} (pid {pid}) is still alive after {sig.name} and SIGKILL")
    _wait_gone(pid)
    return pid


def start_server(env: Environment, kind: str, name: str = "", *, timeout_s: float = _START_TIMEOUT_S) -> float:
    """Start a stopped server again on its old port and data; returns the seconds until it answered."""
    pid = _pid_of(env, kind, name)
    if pid_alive(pid):
        raise DevenvError(f"{kind} {name or ''} is still running (pid {pid}); stop it first")
    started = time.monotonic()
    if kind == "lakefs":
        region = env.region(name)
        base = Path(region.base_dir)
        proc = start_process(
            [str(ensure_lakefs_binary()), "run", "-c", str(base / "lakefs.yaml")],
            log_path=base / "lakefs.stdout.log",
        )
        env.regions[name] = replace(region, pid=proc.pid)
        env.save()
        wait_http_ok(f"{region.endpoint}/_health", timeout_s=timeout_s, process=proc, log_path=Path(region.log_path))
    elif kind == "minio":
        minio = env.minio[name]
        proc = start_process(
            [str(ensure_minio_binary()), "server", minio.data_dir, "--address", minio.endpoint.removeprefix("http://"),
             "--console-address", f"127.0.0.1:{free_port()}", "--quiet"],
            log_path=Path(minio.log_path),
            env={"MINIO_ROOT_USER": minio.access_key, "MINIO_ROOT_PASSWORD": minio.secret_key, "MINIO_BROWSER": "off",
                 "MINIO_UPDATE": "off", "MINIO_CALLHOME_ENABLE": "off"},
        )  # fmt: skip
        env.minio[name] = replace(minio, pid=proc.pid)
        env.save()
        wait_http_ok(
            f"{minio.endpoint}/minio/health/live", timeout_s=timeout_s, process=proc, log_path=Path(minio.log_path)
        )
    else:
        proc = _start_postgres(env)
        env.postgres = {**(env.postgres or {}), "pid": proc.pid}
        env.save()
        _wait_postgres(str(env.postgres["url"]), proc, timeout_s)
    return time.monotonic() - started


def restart_server(
    env: Environment,
    kind: str,
    name: str = "",
    *,
    sig: signal.Signals = signal.SIGKILL,
    down_seconds: float = 0.0,
) -> float:
    """``stop_server``, stay down ``down_seconds``, ``start_server``; returns the seconds the restart took."""
    stop_server(env, kind, name, sig=sig)
    time.sleep(max(0.0, down_seconds))
    return start_server(env, kind, name)


# ---------------------------------------------------------------- internals
def _pid_of(env: Environment, kind: str, name: str) -> int:
    if kind == "lakefs":
        return env.region(name).pid
    if kind == "minio":
        if name not in env.minio:
            raise DevenvError(f"no MinIO server {name!r} in this environment (have {sorted(env.minio)})")
        return env.minio[name].pid
    if kind == "postgres":
        if not env.postgres:
            raise DevenvError("this environment has no PostgreSQL (start it with with_postgres=True)")
        return int(env.postgres["pid"])
    raise DevenvError(f"unknown server kind {kind!r}: expected one of {', '.join(SERVER_KINDS)}")


def _wait_gone(pid: int, timeout_s: float = 10.0) -> None:
    """Wait (bounded) until the pid is reaped, not just a zombie: PostgreSQL refuses to start while the
    pid in its ``postmaster.pid`` still exists, and a zombie still exists."""
    for _ in range(int(timeout_s / 0.05)):
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.05)
    raise DevenvError(f"pid {pid} was not reaped within {timeout_s:.0f}s")


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError as exc:
        raise DevenvError(f"cannot read the command line of pid {pid}: {exc}") from exc
    argv = [a.decode() for a in raw.split(b"\0") if a]
    if not argv:
        raise DevenvError(f"pid {pid} has no command line (already gone?)")
    return argv


def _start_postgres(env: Environment) -> subprocess.Popen[bytes]:
    """The postmaster again with its recorded argv, as the account that owns its data directory."""
    assert env.postgres is not None
    argv = list(env.postgres.get("argv") or [])
    if "-D" not in argv:
        raise DevenvError("PostgreSQL's command line was not recorded; stop it with stop_server first")
    data_dir = Path(argv[argv.index("-D") + 1])
    owner = data_dir.stat()
    as_other = owner.st_uid != os.geteuid()
    log_path = Path(env.state_dir) / "postgres" / "postgres.log"  # where ``environment_up`` started it
    log_path.parent.mkdir(parents=True, exist_ok=True)
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    child_env.update(LC_ALL="C", LANG="C")
    with open(log_path, "ab") as log:
        log.write(b"\n=== restarting (devenv.restart) ===\n")
        log.flush()
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            cwd=str(data_dir),
            start_new_session=True,
            user=owner.st_uid if as_other else None,
            group=owner.st_gid if as_other else None,
            extra_groups=[] if as_other else None,
        )


def _wait_postgres(url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Bounded wait until a TCP login with the application URL succeeds (crash recovery included)."""
    import psycopg  # lazily: `scripts/dev` imports this package with the system Python, before the venv exists

    parsed = urllib.parse.urlsplit(url.replace("postgresql+psycopg://", "postgresql://", 1))
    deadline = time.monotonic() + timeout_s
    last = ""
    for _ in range(int(timeout_s / 0.2) + 1):
        if proc.poll() is not None:
            raise DevenvError(f"PostgreSQL exited with code {proc.returncode} while restarting")
        try:
            with psycopg.connect(
                host=parsed.hostname, port=parsed.port, user=parsed.username, password=parsed.password,
                dbname=parsed.path.lstrip("/"), connect_timeout=2,
            ) as conn:  # fmt: skip
                conn.execute("SELECT 1").fetchone()
                return
        except psycopg.Error as exc:
            last = type(exc).__name__
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    raise DevenvError(f"PostgreSQL did not accept logins within {timeout_s:.0f}s after a restart ({last})")
