"""The fault suite's own environment and the sync process it kills.

The fault tests kill and restart servers, so they never share the session's servers: ``FaultRig`` wraps
an environment of their own (source region on the local blockstore, destination region on a MinIO server,
PostgreSQL as the mirrors database) and keeps every output our processes printed, for the secret scan.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakefs_mirror_devenv import Environment

from lakefs_mirror_dagster.cli import ExitCode
from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.storage import Blockstore, build_blockstore

__all__ = ["DST", "MINIO", "SRC", "FaultRig", "MirrorPair", "SyncOutcome", "SyncZygote"]

SRC, DST, MINIO = "fault-src", "fault-dst", "fault-minio"

# A zygote: imports the CLI and everything a sync needs once, then forks one child per sync; the child runs
# `lakefs-mirror <argv>` (the CLI's own ``main``, exactly what `python -m lakefs_mirror_dagster.cli` runs) with
# its output in a file. The zygote SIGKILLs the child after ``kill_after`` seconds when asked (it still owns
# the unreaped pid, so the signal cannot reach another process) and reports how the child ended.
_ZYGOTE = """
import json, os, signal, sys, time, traceback
import lakefs_mirror_dagster.cli as cli
import lakefs_mirror_dagster.config, lakefs_mirror_dagster.replication, lakefs_mirror_dagster.storage
import lakefs_mirror_dagster.mirrors, boto3, psycopg, sqlalchemy
print("ready", flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fd = os.open(cmd["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.environ.update(cmd["env"])
            if cmd.get("copy_delay"):  # a slow link: every object copy waits first
                import lakefs_mirror_dagster.storage.transfer as transfer
                copy, delay = transfer.copy_object, cmd["copy_delay"]
                transfer.copy_object = lambda *a, **k: (time.sleep(delay), copy(*a, **k))[1]
            code = cli.main(cmd["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        # What the process's atexit handler does at a normal exit, which os._exit skips: remove its records of
        # refs in flight (a SIGKILLed child never gets here, and leaves stale ones, as a real process would).
        from lakefs_mirror_dagster.replication.in_flight import clear_in_flight_records
        clear_in_flight_records()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    started, killed, hung = time.monotonic(), False, False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        elapsed = time.monotonic() - started
        if done:
            break
        if not killed and cmd["kill_after"] is not None and elapsed >= cmd["kill_after"]:
            os.kill(pid, signal.SIGKILL)
            killed = True
        elif not killed and elapsed >= cmd["timeout"]:
            os.kill(pid, signal.SIGKILL)
            killed = hung = True
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    print(json.dumps({"code": code, "seconds": elapsed, "killed": killed, "hung": hung}), flush=True)
"""
_READY_TIMEOUT_S = 180.0


@dataclass
class SyncOutcome:
    """How one sync process ended: exit code (-9: SIGKILLed), whether we killed it, and all it printed."""

    returncode: int
    output: str
    seconds: float
    killed: bool = False
    hung: bool = False

    @property
    def clean(self) -> bool:
        """Finished, or failed the way an operator can read: blocked refs or a mirror not synced in the pass
        (1), or a one-line error: the store or lakeFS unavailable (4), or refused (2)."""
        if self.hung:
            return False
        if self.returncode == 0:
            return True
        if self.returncode == 1:
            readable = " blocked " in self.output or "! not synced: " in self.output
            return readable and "Traceback (most recent call last)" not in self.tail()
        return self.returncode in (ExitCode.USAGE, ExitCode.UNAVAILABLE) and "lakefs-mirror: " in self.output

    def tail(self, lines: int = 8) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


class SyncZygote:
    """Runs syncs as forked children of one pre-imported Python process (see ``_ZYGOTE``), one at a time."""

    def __init__(self, log_dir: Path, sink: list[tuple[str, str]]) -> None:
        self._log_dir, self._sink = log_dir, sink
        self._count = 0
        self._pending: tuple[str, Path, float] | None = None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLICATION_", "LAKEFS_MIRROR_FAILPOINT"))}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        if self._read_line(_READY_TIMEOUT_S).strip() != "ready":
            self.close()
            raise RuntimeError("the sync zygote did not start")

    def _read_line(self, timeout_s: float) -> str:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout_s)
        if not ready:
            raise TimeoutError(f"no answer from the sync zygote within {timeout_s:.0f}s")
        return self._proc.stdout.readline().decode()

    def start(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        kill_after: float | None,
        timeout_s: float,
        label: str,
        copy_delay: float = 0.0,
    ) -> None:
        """Fork a child running ``lakefs-mirror <argv>``; ``kill_after`` seconds later it gets SIGKILL.

        ``copy_delay`` makes every object copy of the child wait that long first (a slow link), so that a
        test can act while a sync is certainly still copying, however fast the machine is.
        """
        assert self._pending is None, "one sync at a time"
        assert self._proc.stdin is not None
        self._count += 1
        log = self._log_dir / f"sync-{self._count:04}.log"
        cmd = {"argv": argv, "env": env, "kill_after": kill_after, "timeout": timeout_s, "log": str(log),
               "copy_delay": copy_delay}  # fmt: skip
        self._proc.stdin.write((json.dumps(cmd) + "\n").encode())
        self._proc.stdin.flush()
        self._pending = (label, log, timeout_s)

    def finished(self) -> bool:
        """Whether the child started last has ended (its report is waiting), without blocking."""
        assert self._proc.stdout is not None
        return bool(select.select([self._proc.stdout], [], [], 0)[0])

    def result(self) -> SyncOutcome:
        """Wait (bounded by the sync's own timeout) for the child started last to end."""
        assert self._pending is not None, "no sync running"
        label, log, timeout_s = self._pending
        report = json.loads(self._read_line(timeout_s + 60))
        self._pending = None
        output = log.read_text(errors="replace") if log.exists() else ""
        if report["hung"]:
            output += f"\n[fault suite] the sync did not finish within {timeout_s:.0f}s and was killed"
        self._sink.append((label, output))
        return SyncOutcome(report["code"], output, report["seconds"], report["killed"], report["hung"])

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=30)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


@dataclass
class MirrorPair:
    """A source repository and its mirror, with both sides' clients and stores."""

    repo: str
    mirror: str
    src: LakeFSClient
    dst: LakeFSClient
    src_store: Blockstore
    src_ns: str
    dst_store: Blockstore
    dst_ns: str


@dataclass
class FaultRig:
    """The fault suite's environment plus helpers; ``outputs`` collects (label, text) of every process we ran."""

    env: Environment
    outputs: list[tuple[str, str]] = field(default_factory=list)
    #: The source and destination regions (tests/wan runs the same rig over a simulated link between others).
    src: str = SRC
    dst: str = DST
    _services: dict[str, ReplicationService] = field(default_factory=dict)
    _clients: dict[str, LakeFSClient] = field(default_factory=dict)
    _zygote: SyncZygote | None = None

    def config_path(self, region: str) -> Path:
        return Path(self.env.state_dir) / f"replication-{region}.yaml"

    def client(self, region: str) -> LakeFSClient:
        if region not in self._clients:
            r = self.env.region(region)
            self._clients[region] = LakeFSClient(r.endpoint, r.access_key_id, r.secret_access_key)
        return self._clients[region]

    def store(self, region: str) -> Blockstore:
        return build_blockstore(self.env.region(region).blockstore)

    def service(self, region: str) -> ReplicationService:
        if region not in self._services:
            self._services[region] = ReplicationService(load_config(self.config_path(region), env={}))
        return self._services[region]

    def close(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
        for s in self._services.values():
            s.close()
        for c in self._clients.values():
            c.close()

    def new_pair(self, prefix: str) -> MirrorPair:
        """A fresh source repository (empty ``main``) and its mirror definition in the destination region."""
        repo, mirror = f"{prefix}-{uuid.uuid4().hex[:8]}", f"{prefix}-m-{uuid.uuid4().hex[:8]}"
        src, dst = self.client(self.src), self.client(self.dst)
        src_ns = self.env.region(self.src).namespace_for(repo)
        dst_ns = self.env.region(self.dst).namespace_for(mirror)
        src.create_repository(repo, src_ns)
        self.service(self.src).create_mirror(
            source_repository=repo, name=mirror, region=self.dst, storage_namespace=dst_ns
        )
        return MirrorPair(repo, mirror, src, dst, self.store(self.src), src_ns, self.store(self.dst), dst_ns)

    def zygote(self) -> SyncZygote:
        if self._zygote is None:
            log_dir = Path(self.env.state_dir) / "sync-logs"
            log_dir.mkdir(exist_ok=True)
            self._zygote = SyncZygote(log_dir, self.outputs)
        return self._zygote

    def start_sync(
        self,
        mirror: str,
        *,
        failpoint: str | None = None,
        kill_after: float | None = None,
        extra_env: dict[str, str] | None = None,
        timeout_s: float = 180.0,
        label: str = "",
        copy_delay: float = 0.0,
    ) -> None:
        """Start `lakefs-mirror --config <destination region> sync --once --mirror <mirror>`; see ``sync_result``."""
        env = {"LAKEFS_MIRROR_FAILPOINT": failpoint or "", **(extra_env or {})}
        argv = ["--config", str(self.config_path(self.dst)), "sync", "--once", "--mirror", mirror]
        self.zygote().start(
            argv, env=env, kill_after=kill_after, timeout_s=timeout_s, label=label or f"sync {mirror}",
            copy_delay=copy_delay,
        )  # fmt: skip

    def run_cli(
        self, region: str, *args: str, env: dict[str, str] | None = None, timeout_s: float = 180.0
    ) -> SyncOutcome:
        """Any `lakefs-mirror --config <region> <args>` command, run like the syncs (forked from the zygote)."""
        argv = ["--config", str(self.config_path(region)), *args]
        self.zygote().start(argv, env=env or {}, kill_after=None, timeout_s=timeout_s, label=" ".join(args))
        return self.zygote().result()

    def sync_result(self) -> SyncOutcome:
        return self.zygote().result()

    def run_sync(self, mirror: str, **kwargs: Any) -> SyncOutcome:
        self.start_sync(mirror, **kwargs)
        return self.sync_result()
