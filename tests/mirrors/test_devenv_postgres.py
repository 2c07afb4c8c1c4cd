"""The private PostgreSQL server the mirrors tests and the dev environment run on."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from lakefs_mirror_devenv import postgres, postgres_install
from lakefs_mirror_devenv.postgres import (
    PostgresServer,
    ensure_postgres_binaries,
    find_postgres_bindir,
)
from lakefs_mirror_devenv.processes import DevenvError, pid_alive, stop_pid


def _scalar(url: str, query: str) -> object:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(query)).scalar_one()
    finally:
        engine.dispose()


def test_url_logs_in_over_loopback_tcp_with_its_password(pg_server: PostgresServer) -> None:
    url = sa.engine.make_url(pg_server.url)
    assert url.host == "127.0.0.1" and url.port == pg_server.port and url.drivername == "postgresql+psycopg"
    assert _scalar(pg_server.url, "SELECT current_user") == pg_server.user
    assert _scalar(pg_server.url, "SHOW listen_addresses") == "127.0.0.1"
    # The password is really checked (scram over TCP), not trusted.
    wrong = url.set(password="not-the-password").render_as_string(hide_password=False)
    with pytest.raises(sa.exc.OperationalError, match="password authentication failed"):
        _scalar(wrong, "SELECT 1")


def test_make_database_gives_fresh_isolated_databases(pg_server: PostgresServer) -> None:
    first = pg_server.make_database("iso_first")
    second = pg_server.make_database("iso_second")
    try:
        engine = sa.create_engine(first)
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE marker (x int)"))
        engine.dispose()
        assert _scalar(first, "SELECT count(*) FROM pg_tables WHERE tablename = 'marker'") == 1
        assert _scalar(second, "SELECT count(*) FROM pg_tables WHERE tablename = 'marker'") == 0

        with pytest.raises(DevenvError, match="already exists"):
            pg_server.make_database("iso_first")
        assert pg_server.make_database("iso_first", replace=True) == first
        assert _scalar(first, "SELECT count(*) FROM pg_tables WHERE tablename = 'marker'") == 0
        with pytest.raises(DevenvError, match="invalid PostgreSQL name"):
            pg_server.make_database("Robert'); DROP TABLE x;--")
    finally:
        pg_server.drop_database("iso_first")
        pg_server.drop_database("iso_second")


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_start_stop_restart_keeps_data_and_stop_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop is PostgreSQL's fast shutdown; one that PostgreSQL cannot answer (here: stopped by SIGSTOP) still
    ends, by the immediate shutdown and then the kill, each after its wait."""
    base = tmp_path / "pg"
    server = PostgresServer.start(base, database="keep", durable=False)
    try:
        assert pid_alive(server.pid)
        assert Path(f"/proc/{server.pid}/comm").read_text().strip() in ("postgres", "postmaster")
        assert _port_open(server.port)
        assert (base / "postgres.log").exists()
        engine = sa.create_engine(server.url)
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE kept (x int)"))
            conn.execute(sa.text("INSERT INTO kept VALUES (42)"))
        engine.dispose()
    finally:
        server.stop()
    assert server.exit_code == 0  # it ended by its own fast shutdown, not killed
    assert not pid_alive(server.pid) and not server.is_running()
    assert not _port_open(server.port)
    server.stop()  # idempotent

    again = PostgresServer.start(base, database="keep", durable=False)
    try:
        assert again.password != server.password  # a fresh password each start; the old one is dead
        with pytest.raises(sa.exc.OperationalError, match="password authentication failed"):
            _scalar(again.url.replace(again.password, server.password), "SELECT 1")
        assert _scalar(again.url, "SELECT x FROM kept") == 42
        data_dir = again.data_dir
        os.kill(again.pid, signal.SIGSTOP)  # a postmaster that answers no signal but the kill
        waits = [(signal.SIGINT, 0.5), (signal.SIGQUIT, 0.5), (signal.SIGKILL, 30.0)]
        monkeypatch.setattr(postgres, "_STOP_SIGNALS", tuple(waits))
    finally:
        try:
            again.stop(remove_data=True)
        finally:
            if again.exit_code is None:  # a stop that failed leaves no stopped server behind
                os.kill(again.pid, signal.SIGKILL)
    assert again.exit_code == -signal.SIGKILL and not pid_alive(again.pid)
    assert not data_dir.exists()


def test_start_rejects_bad_names_before_doing_anything(tmp_path: Path) -> None:
    with pytest.raises(DevenvError, match="invalid PostgreSQL name"):
        PostgresServer.start(tmp_path / "x", database="Bad-Name")
    assert not (tmp_path / "x").exists()


def test_binaries_are_found_and_pg_config_is_not_trusted_blindly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = find_postgres_bindir()
    assert real is not None, "PostgreSQL server binaries are missing on this machine"
    assert (real / "initdb").is_file() and (real / "postgres").is_file()
    assert ensure_postgres_binaries(install=False) == real

    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    _script(fake_bin / "pg_config", "echo /nonexistent/postgresql/bin")
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    found = find_postgres_bindir()
    assert found is not None and found != Path("/nonexistent/postgresql/bin")
    assert (found / "initdb").is_file()


def _script(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_missing_binaries_are_installed_with_apt_and_failures_are_loud(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """apt-get is faked (on PATH) so the test sees exactly what would run, without touching the system."""
    calls = tmp_path / "apt-calls"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    _script(fake_bin / "apt-get", f'echo "$*" >> {calls}\necho "apt says: $1"\nexit "${{FAKE_APT_EXIT:-0}}"')
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(postgres_install, "find_postgres_bindir", lambda: None)
    monkeypatch.setattr(postgres_install, "CREATECLUSTER_CONF_DIR", tmp_path / "createcluster.d")
    monkeypatch.setattr(postgres_install, "_apt_updated", False)

    with pytest.raises(DevenvError, match="installing is disabled"):
        ensure_postgres_binaries(install=False)
    assert not calls.exists()

    if os.geteuid() != 0:
        with pytest.raises(DevenvError, match="needs root"):
            ensure_postgres_binaries()
        return

    # apt "succeeds" but the binaries still are not there: an error, never a silent skip.
    with pytest.raises(DevenvError, match="no initdb/postgres binaries were found"):
        ensure_postgres_binaries()
    assert calls.read_text().splitlines() == ["update", "install -y --no-install-recommends postgresql"]
    conf = (tmp_path / "createcluster.d" / "lakefs-mirror-dagster.conf").read_text()
    assert "create_main_cluster = false" in conf
    assert "apt-get update" in capsys.readouterr().err

    # apt-get update runs once per process; a failing install reports apt's own output.
    monkeypatch.setenv("FAKE_APT_EXIT", "100")
    with pytest.raises(DevenvError, match=r"exit code 100(.|\n)*apt says: install"):
        ensure_postgres_binaries()
    assert calls.read_text().splitlines()[2:] == ["install -y --no-install-recommends postgresql"]


def test_no_apt_and_no_binaries_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_install, "find_postgres_bindir", lambda: None)
    monkeypatch.setattr(postgres_install.shutil, "which", lambda name: None)
    with pytest.raises(DevenvError, match="apt-get is not available"):
        ensure_postgres_binaries()


def test_server_outlives_the_process_that_started_it(tmp_path: Path) -> None:
    """``devenv up`` starts the server from a CLI process that then exits; the server must keep running."""
    starter = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from lakefs_mirror_devenv.postgres import PostgresServer\n"
        "s = PostgresServer.start(Path(sys.argv[1]), durable=False)\n"
        "print(json.dumps({'url': s.url, 'pid': s.pid}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", starter, str(tmp_path / "pg")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    pid = int(info["pid"])
    try:
        assert _scalar(info["url"], "SELECT 1") == 1
    finally:
        stop_pid(pid, timeout_s=30)  # what `devenv down` does
        outside = tmp_path / "pg" / "pg-outside"  # as root the data lives outside the 0700 tmp dir
        if outside.is_symlink():
            shutil.rmtree(os.readlink(outside), ignore_errors=True)
    assert not pid_alive(pid)
