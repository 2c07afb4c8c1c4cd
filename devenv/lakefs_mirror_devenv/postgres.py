"""A private PostgreSQL server for the shared mirrors database in tests and development.

Regions share one mirrors database; to test that sharing for real we need a real PostgreSQL, started
on loopback on a free port, with a password user reached over TCP exactly like a remote database would
be. The server binaries come from the machine (Debian's ``postgresql`` package, installed on demand).
PostgreSQL refuses to run as root, so as root the server runs as an unprivileged system user.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import psycopg
from psycopg import sql

from .postgres_install import ensure_postgres_binaries, find_postgres_bindir, say
from .postgres_user import OsUser, own, run_as, server_env, server_os_user, user_can_use
from .processes import DevenvError, free_port, pid_alive

__all__ = [
    "PostgresServer",
    "ensure_postgres_binaries",
    "find_postgres_bindir",
]

_SUPERUSER = "postgres"
_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 30.0
#: How ``stop`` asks, each for at most its wait: fast shutdown, immediate shutdown, then the kill.
_STOP_SIGNALS: tuple[tuple[signal.Signals, float], ...] = (
    (signal.SIGINT, _STOP_TIMEOUT_S),
    (signal.SIGQUIT, 5.0),
    (signal.SIGKILL, 5.0),
)
_PORT_ATTEMPTS = 3
# sun_path is 108 bytes on Linux; leave room for "/.s.PGSQL.NNNNN" and its lock file.
_MAX_SOCKET_DIR_LEN = 80
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _tail(path: Path, lines: int = 20) -> str:
    if not path.exists():
        return ""
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- last lines of {path} ---\n" + "\n".join(text)


class PostgresServer:
    """A running private PostgreSQL server; ``url`` is the SQLAlchemy URL of its application database."""

    def __init__(
        self,
        *,
        base_dir: Path,
        data_dir: Path,
        socket_dir: Path,
        log_path: Path,
        port: int,
        user: str,
        password: str,
        database: str,
        process: subprocess.Popen[bytes],
        cleanup_dirs: Sequence[Path] = (),
    ) -> None:
        self.base_dir = base_dir
        self.data_dir = data_dir
        self.socket_dir = socket_dir
        self.log_path = log_path
        self.host = "127.0.0.1"
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self._process = process
        self._cleanup_dirs = list(cleanup_dirs)
        self._stopped = False

    # ------------------------------------------------------------------ start
    @classmethod
    def start(
        cls,
        base_dir: Path,
        *,
        database: str = "mirrors",
        user: str = "mirrors",
        durable: bool = True,
        install: bool = True,
        timeout_s: float = _START_TIMEOUT_S,
        stop_at_exit: bool = False,
    ) -> PostgresServer:
        """Initialise (first time) and start a server under ``base_dir``; returns once it accepts logins.

        ``durable=False`` turns off fsync for fast throwaway test databases. An existing data directory
        is reused, so a dev database survives restarts. The server runs in its own session and outlives
        this process (``devenv up`` relies on that) unless ``stop_at_exit``. Fails with the server log's
        tail on any problem.
        """
        for ident in (database, user):
            _check_ident(ident)
        bindir = ensure_postgres_binaries(install=install)
        os_user = server_os_user()
        base_dir = Path(base_dir).resolve()
        base_dir.mkdir(parents=True, exist_ok=True)
        runtime, cleanup = _runtime_dir(base_dir, os_user)
        data_dir = runtime / "data"
        socket_dir = runtime / "run"
        if len(str(socket_dir)) > _MAX_SOCKET_DIR_LEN:
            socket_dir = Path(tempfile.mkdtemp(prefix="lmdpg-", dir="/tmp"))
            cleanup.append(socket_dir)
        own(socket_dir, os_user)
        log_path = base_dir / "postgres.log"
        if not (data_dir / "PG_VERSION").exists():
            _initdb(bindir, data_dir, os_user, log_path)
        password = secrets.token_hex(16)
        last_error = ""
        for _attempt in range(_PORT_ATTEMPTS):
            port = free_port()
            process = _launch(bindir, data_dir, socket_dir, port, os_user, log_path, durable=durable)
            try:
                _wait_ready(process, socket_dir, port, timeout_s, log_path)
            except _PortTaken as exc:
                last_error = str(exc)
                continue
            except BaseException:
                _terminate(process)
                raise
            server = cls(
                base_dir=base_dir,
                data_dir=data_dir,
                socket_dir=socket_dir,
                log_path=log_path,
                port=port,
                user=user,
                password=password,
                database=database,
                process=process,
                cleanup_dirs=cleanup,
            )
            try:
                server._create_role_and_database()
                server._check_tcp_login()
            except BaseException:
                server.stop()
                raise
            if stop_at_exit:
                atexit.register(server.stop)
            say(f"PostgreSQL {bindir.parent.name} ready on 127.0.0.1:{port} (pid {process.pid}, data {data_dir})")
            return server
        raise DevenvError(f"PostgreSQL could not bind a free port in {_PORT_ATTEMPTS} attempts: {last_error}")

    # --------------------------------------------------------------- properties
    @property
    def pid(self) -> int:
        """Process id of the postmaster (the leader of its own process group)."""
        return self._process.pid

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the application database, over TCP with the password user."""
        return self.url_for(self.database)

    def url_for(self, database: str) -> str:
        """SQLAlchemy URL of another database on this server, as the application user."""
        return f"postgresql+psycopg://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def libpq_url_for(self, database: str) -> str:
        """The libpq URI of ``database``, as lakeFS's ``database.postgres.connection_string`` (and so
        ``refstore_database``) takes it: no SQLAlchemy driver, no TLS on loopback."""
        auth = f"{quote(self.user, safe='')}:{quote(self.password, safe='')}"
        return f"postgres://{auth}@{self.host}:{self.port}/{database}?sslmode=disable"

    def is_running(self) -> bool:
        return not self._stopped and self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """How the postmaster ended: 0 after a clean shutdown, minus the signal that killed it, None while it runs."""
        return self._process.poll()

    # ------------------------------------------------------------ databases
    def make_database(self, name: str, *, replace: bool = False) -> str:
        """Create database ``name`` owned by the application user; returns its URL.

        Tests use it to get a fresh, empty database each. An existing database is an error unless
        ``replace`` (then it is dropped, disconnecting its sessions, and created again).
        """
        _check_ident(name)
        with self._admin() as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if exists and not replace:
                raise DevenvError(f"database {name!r} already exists on 127.0.0.1:{self.port}")
            if exists:
                conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(self.user)))
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop ``name`` if it exists (open sessions are disconnected)."""
        _check_ident(name)
        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    def _admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """Superuser session over the private unix socket (trust auth; only our OS user can reach it)."""
        return psycopg.connect(
            host=str(self.socket_dir), port=self.port, user=_SUPERUSER, dbname="postgres",
            autocommit=True, connect_timeout=5,
        )  # fmt: skip

    def _create_role_and_database(self) -> None:
        with self._admin() as conn:
            role = sql.Identifier(self.user)
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (self.user,)).fetchone()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(
                sql.SQL(verb + " ROLE {} WITH LOGIN CREATEDB PASSWORD {}").format(role, sql.Literal(self.password))
            )
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(self.database), role))

    def _check_tcp_login(self) -> None:
        """Prove the URL we hand out works: TCP on 127.0.0.1 with the password (scram-sha-256)."""
        try:
            with psycopg.connect(
                host=self.host, port=self.port, user=self.user, password=self.password,
                dbname=self.database, connect_timeout=5,
            ) as conn:  # fmt: skip
                conn.execute("SELECT 1").fetchone()
        except psycopg.Error as exc:
            raise DevenvError(f"PostgreSQL started but the TCP login failed: {exc}{_tail(self.log_path)}") from exc

    # ------------------------------------------------------------------ stop
    def stop(self, *, remove_data: bool = False) -> None:
        """Fast shutdown (SIGINT), then SIGQUIT and SIGKILL by pid if it lingers; bounded in time.

        ``remove_data`` also deletes the data directory (and any runtime dirs outside ``base_dir``).
        """
        if not self._stopped:
            self._stopped = True
            _terminate(self._process)
        if remove_data:
            shutil.rmtree(self.data_dir.parent, ignore_errors=True)
        for extra in self._cleanup_dirs:
            if remove_data or extra == self.socket_dir:
                shutil.rmtree(extra, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"PostgresServer(127.0.0.1:{self.port}, db={self.database!r}, pid={self.pid}, {state})"


# ---------------------------------------------------------------- internals
class _PortTaken(DevenvError):
    """The free port we picked was taken before the server bound it; try another."""


def _check_ident(name: str) -> None:
    if not _IDENT.match(name):
        raise DevenvError(f"invalid PostgreSQL name {name!r}: use lowercase letters, digits and _ (max 63)")


def _runtime_dir(base_dir: Path, os_user: OsUser) -> tuple[Path, list[Path]]:
    """Where the data and socket dirs live: ``base_dir`` if the server's account can reach it.

    As root, ``base_dir`` often sits under a 0700 root directory (pytest's tmp dirs, ``~/.cache``) that
    the unprivileged account cannot traverse. Then the data lives in a directory under the system temp
    dir named after ``base_dir``, linked from ``base_dir/data``; a link that is missing means a fresh
    ``base_dir``, so a leftover directory from an earlier one of the same path is wiped, not reused.
    """
    own(base_dir / "pg", os_user)
    if user_can_use(os_user, base_dir / "pg"):
        return base_dir / "pg", []
    shutil.rmtree(base_dir / "pg", ignore_errors=True)
    digest = hashlib.sha256(str(base_dir).encode()).hexdigest()[:16]
    outside = Path(tempfile.gettempdir()) / f"lakefs-mirror-pg-{digest}"
    link = base_dir / "pg-outside"
    linked = link.is_symlink() and Path(os.readlink(link)) == outside
    if not linked and (outside.exists() or outside.is_symlink()):
        if outside.is_symlink() or not outside.is_dir():
            raise DevenvError(f"{outside} exists and is not a directory; remove it")
        shutil.rmtree(outside)
    own(outside, os_user)
    if not user_can_use(os_user, outside):
        raise DevenvError(f"the PostgreSQL account {os_user.name!r} cannot use {outside}")
    if not linked:
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(outside)
    return outside, [outside]


def _initdb(bindir: Path, data_dir: Path, os_user: OsUser, log_path: Path) -> None:
    if data_dir.exists():  # no PG_VERSION: a half-made directory from an interrupted initdb
        shutil.rmtree(data_dir)
    own(data_dir, os_user)
    pwfile = data_dir.parent / f".pwfile-{secrets.token_hex(4)}"
    pwfile.write_text(secrets.token_hex(16) + "\n")
    if os_user.uid is not None:
        os.chown(pwfile, os_user.uid, os_user.gid if os_user.gid is not None else -1)
    pwfile.chmod(0o600)
    say(f"initdb {data_dir} (as OS user {os_user.name!r})")
    try:
        proc = run_as(
            os_user,
            [str(bindir / "initdb"), "-D", str(data_dir), "-U", _SUPERUSER, "--pwfile", str(pwfile),
             "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync"],
            timeout=300,
        )  # fmt: skip
    finally:
        pwfile.unlink(missing_ok=True)
    with open(log_path, "a") as log:
        log.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise DevenvError(f"initdb failed with exit code {proc.returncode}{_tail(log_path)}")


def _launch(
    bindir: Path,
    data_dir: Path,
    socket_dir: Path,
    port: int,
    os_user: OsUser,
    log_path: Path,
    *,
    durable: bool,
) -> subprocess.Popen[bytes]:
    """Start the postmaster directly (not via pg_ctl) so the pid we return is the server's own."""
    argv = [
        str(bindir / "postgres"), "-D", str(data_dir), "-p", str(port),
        "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={socket_dir}",
        "-c", "unix_socket_permissions=0700", "-c", "max_connections=200", "-c", "logging_collector=off",
    ]  # fmt: skip
    if not durable:
        argv += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
    with open(log_path, "ab") as log:
        log.write(f"\n=== starting {' '.join(argv)} ===\n".encode())
        log.flush()
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=server_env(),
            cwd=str(data_dir),
            start_new_session=True,
            user=os_user.uid,
            group=os_user.gid,
            extra_groups=[] if os_user.uid is not None else None,
        )


def _wait_ready(
    process: subprocess.Popen[bytes], socket_dir: Path, port: int, timeout_s: float, log_path: Path
) -> None:
    """Poll until a login succeeds; at most ``timeout_s`` seconds and a fixed number of attempts."""
    deadline = time.monotonic() + timeout_s
    last_error = ""
    for _ in range(int(timeout_s / 0.1) + 1):
        if process.poll() is not None:
            tail = _tail(log_path)
            if "could not bind" in tail or "Address already in use" in tail:
                raise _PortTaken(f"port {port} was taken{tail}")
            raise DevenvError(f"PostgreSQL exited with code {process.returncode} while starting{tail}")
        try:
            with psycopg.connect(
                host=str(socket_dir), port=port, user=_SUPERUSER, dbname="postgres", connect_timeout=2
            ) as conn:
                conn.execute("SELECT 1").fetchone()
                return
        except psycopg.Error as exc:
            last_error = str(exc).strip()
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    raise DevenvError(f"PostgreSQL did not accept connections within {timeout_s:.0f}s ({last_error}){_tail(log_path)}")


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGINT (fast shutdown), then SIGQUIT (immediate), then SIGKILL; each wait bounded."""
    for sig, wait_s in _STOP_SIGNALS:
        if process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait_s)
    if process.poll() is None and pid_alive(process.pid):
        raise DevenvError(f"PostgreSQL pid {process.pid} did not exit after SIGKILL")
