"""PostgreSQL's server binaries for the private test server: found on the machine, or installed with Debian's
``apt-get install postgresql`` (root only, once per machine), never with a default cluster of its own."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .processes import DevenvError

__all__ = ["CREATECLUSTER_CONF_DIR", "ensure_postgres_binaries", "find_postgres_bindir", "say"]

_APT_TIMEOUT_S = 1800
# Debian's postgresql-common reads this directory; our file stops it creating a default cluster.
CREATECLUSTER_CONF_DIR = Path("/etc/postgresql-common/createcluster.d")
_apt_updated = False


def say(message: str) -> None:
    """Progress goes to stderr so users see what is installed or started on their machine."""
    print(f"[devenv.postgres] {message}", file=sys.stderr, flush=True)


def _has_server(bindir: Path) -> bool:
    return all((bindir / exe).is_file() and os.access(bindir / exe, os.X_OK) for exe in ("initdb", "postgres"))


def _version_key(path: Path) -> tuple[int, ...]:
    """Numeric sort key for ``/usr/lib/postgresql/<version>/bin`` so 15 beats 9.6."""
    return tuple(int(p) for p in re.findall(r"\d+", path.parent.name)) or (0,)


def find_postgres_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``, or None if no server is installed.

    ``pg_config`` alone is not trusted: on Debian it ships with libpq-dev and names a server directory
    that may not exist, so every candidate must really contain the server binaries.
    """
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=30, check=True)
            candidates.append(Path(out.stdout.strip()))
    candidates.extend(sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True))
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for candidate in candidates:
        if _has_server(candidate):
            return candidate
    return None


def ensure_postgres_binaries(*, install: bool = True) -> Path:
    """The server binaries' directory, installing Debian's ``postgresql`` package when they are missing.

    Idempotent: nothing is installed when a server is already there. The package's default cluster is
    not created (no stray server on port 5432); ours are private to each ``PostgresServer``.
    """
    global _apt_updated
    found = find_postgres_bindir()
    if found is not None:
        return found
    if not install:
        raise DevenvError("PostgreSQL server binaries (initdb, postgres) not found and installing is disabled")
    apt = shutil.which("apt-get")
    if apt is None:
        raise DevenvError(
            "PostgreSQL server binaries (initdb, postgres) not found and apt-get is not available; "
            "install a PostgreSQL server (>= 12) so that `pg_config --bindir` or "
            "/usr/lib/postgresql/*/bin has them"
        )
    if os.geteuid() != 0:
        raise DevenvError(
            "PostgreSQL server binaries (initdb, postgres) not found; installing them needs root: "
            "run `sudo apt-get install -y postgresql` and retry"
        )
    conf_dir = CREATECLUSTER_CONF_DIR
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "lakefs-mirror-dagster.conf").write_text(
        "# Written by lakefs-mirror-dagster: its dev/test servers are private clusters.\ncreate_main_cluster = false\n"
    )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not _apt_updated:
        say("PostgreSQL server not found; running `apt-get update`")
        _run_apt([apt, "update"], env)
        _apt_updated = True
    say("installing PostgreSQL server: `apt-get install -y postgresql`")
    _run_apt([apt, "install", "-y", "--no-install-recommends", "postgresql"], env)
    found = find_postgres_bindir()
    if found is None:
        raise DevenvError("`apt-get install postgresql` succeeded but no initdb/postgres binaries were found after it")
    say(f"PostgreSQL server installed in {found}")
    return found


def _run_apt(argv: list[str], env: dict[str, str]) -> None:
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=_APT_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise DevenvError(f"`{' '.join(argv)}` did not finish within {_APT_TIMEOUT_S}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
        raise DevenvError(f"`{' '.join(argv)}` failed with exit code {proc.returncode}:\n{tail}")
