"""The operating-system account the private PostgreSQL server runs as: PostgreSQL refuses to run as root, so as
root it runs as ``postgres`` or a dedicated system user created on demand."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .postgres_install import say
from .processes import DevenvError

__all__ = ["OsUser", "own", "run_as", "server_env", "server_os_user", "user_can_use"]

_DEDICATED_OS_USER = "lmd-postgres"


@dataclass(frozen=True)
class OsUser:
    """The account the server runs as (None fields = run as ourselves)."""

    uid: int | None
    gid: int | None
    name: str


def server_os_user() -> OsUser:
    """Ourselves when not root; else ``postgres`` or a dedicated system user created on demand."""
    if os.geteuid() != 0:
        return OsUser(None, None, pwd.getpwuid(os.geteuid()).pw_name)
    for name in ("postgres", _DEDICATED_OS_USER):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return OsUser(entry.pw_uid, entry.pw_gid, name)
    useradd = shutil.which("useradd")
    if useradd is None:
        raise DevenvError("running as root needs an unprivileged user for PostgreSQL, but useradd is missing")
    say(f"creating system user {_DEDICATED_OS_USER!r} to run PostgreSQL (it refuses to run as root)")
    proc = subprocess.run(
        [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
         "--shell", "/usr/sbin/nologin", _DEDICATED_OS_USER],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if proc.returncode not in (0, 9):  # 9: created meanwhile by someone else
        raise DevenvError(f"useradd {_DEDICATED_OS_USER} failed: {proc.stderr.strip()}")
    entry = pwd.getpwnam(_DEDICATED_OS_USER)
    return OsUser(entry.pw_uid, entry.pw_gid, _DEDICATED_OS_USER)


def run_as(user: OsUser, argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=server_env(),
        user=user.uid,
        group=user.gid,
        extra_groups=[] if user.uid is not None else None,
    )


def server_env() -> dict[str, str]:
    """A small environment: no PG* variables of ours leak into the server, and a locale that exists."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(LC_ALL="C", LANG="C")
    return env


def own(path: Path, user: OsUser, mode: int = 0o700) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if user.uid is not None:
        os.chown(path, user.uid, user.gid if user.gid is not None else -1)
    path.chmod(mode)


def user_can_use(user: OsUser, path: Path) -> bool:
    """Whether the server's account can reach ``path`` (a root-only 0700 ancestor would block it)."""
    if user.uid is None:
        return True
    test = shutil.which("test") or "/usr/bin/test"
    proc = run_as(user, [test, "-r", str(path), "-a", "-w", str(path), "-a", "-x", str(path)], timeout=30)
    return proc.returncode == 0
