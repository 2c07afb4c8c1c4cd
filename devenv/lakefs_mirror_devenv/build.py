"""Build lakeFS, MinIO and its client ``mc`` from their Go modules into a cache outside the repository.

Nothing of lakeFS or MinIO is vendored: lakeFS comes in through our small wrapper module
(``gowrap/lakefs``) and MinIO through ``go install``. Builds are keyed by version, reused when present,
serialised by a file lock (two test sessions never build at once), and land atomically (built to a
temporary name, then renamed), so an interrupted build never leaves a broken binary behind.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .processes import DevenvError
from .versions import (
    HELM_MODULE,
    HELM_VERSION,
    LAKEFS_MODULE,
    LAKEFS_VERSION,
    MC_MODULE,
    MC_VERSION,
    MIN_GO_VERSION,
    MINIO_MODULE,
    MINIO_VERSION,
    PROMETHEUS_MODULE,
    PROMETHEUS_VERSION,
    TOXIPROXY_MODULE,
    TOXIPROXY_VERSION,
)

__all__ = [
    "cache_dir",
    "ensure_helm_binary",
    "ensure_lakefs_binary",
    "ensure_mc_binary",
    "ensure_minio_binary",
    "ensure_prometheus_binary",
    "ensure_promtool_binary",
    "ensure_toxiproxy_binaries",
    "executable_from_env",
    "go_install_binary",
    "go_version",
]

_WRAPPER_DIR = Path(__file__).parent / "gowrap" / "lakefs"
_BUILD_TIMEOUT_S = 3600


def cache_dir() -> Path:
    """Where built binaries live: ``$LAKEFS_MIRROR_CACHE`` or ``~/.cache/lakefs-mirror-dagster``."""
    root = os.environ.get("LAKEFS_MIRROR_CACHE") or str(Path.home() / ".cache" / "lakefs-mirror-dagster")
    return Path(root).expanduser()


def go_version() -> tuple[int, int, int]:
    """The machine's Go version; a clear error when Go is missing or too old for the pinned lakeFS."""
    go = shutil.which("go")
    if go is None:
        raise DevenvError(
            "Go is not installed (no `go` on PATH); lakeFS and MinIO are built from their Go modules "
            f"and need Go >= {'.'.join(map(str, MIN_GO_VERSION))}"
        )
    out = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"go(\d+)\.(\d+)(?:\.(\d+))?", out)
    if match is None:
        raise DevenvError(f"cannot read the Go version from {out!r}")
    version = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    if version < MIN_GO_VERSION:
        raise DevenvError(
            f"Go {'.'.join(map(str, version))} is too old: lakeFS {LAKEFS_VERSION} needs Go >= "
            f"{'.'.join(map(str, MIN_GO_VERSION))}"
        )
    return version


def ensure_lakefs_binary() -> Path:
    """Path of the pinned lakeFS server binary, building it on first use (``$LAKEFS_BIN`` wins)."""
    override = os.environ.get("LAKEFS_BIN")
    if override:
        return _existing(override, "LAKEFS_BIN")
    target = cache_dir() / "bin" / f"lakefs-{LAKEFS_VERSION}" / "lakefs"
    if target.exists():
        return target
    with _build_lock("lakefs"):
        if target.exists():
            return target
        go_version()
        work = cache_dir() / "build" / f"lakefs-{LAKEFS_VERSION}"
        work.mkdir(parents=True, exist_ok=True)
        for name in ("go.mod", "go.sum", "main.go"):
            src = _WRAPPER_DIR / name
            if src.exists():
                shutil.copyfile(src, work / name)
        tmp = target.with_name(f".lakefs.{os.getpid()}.tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        # -s -w: no symbol table and no DWARF (panics still name functions): less to compile and link on a
        # first run, where this build is the longest wait.
        ldflags = f"-s -w -X {LAKEFS_MODULE}/pkg/version.Version={LAKEFS_VERSION}"
        _run_go(
            ["go", "build", "-trimpath", "-gcflags=all=-dwarf=false", "-ldflags", ldflags, "-o", str(tmp), "."],
            cwd=work,
            what=f"lakeFS {LAKEFS_VERSION}",
            expect="~4 min on 2 cores",
        )
        tmp.replace(target)
        return target


def ensure_minio_binary() -> Path:
    """Path of the pinned MinIO server binary, ``go install``-ed on first use (``$MINIO_BIN`` wins)."""
    return go_install_binary(MINIO_MODULE, MINIO_VERSION, "minio", override_var="MINIO_BIN", what="MinIO")


def ensure_mc_binary() -> Path:
    """Path of the pinned MinIO client ``mc``, ``go install``-ed on first use (``$MC_BIN`` wins): it sets up
    MinIO bucket replication, which the S3 API cannot."""
    return go_install_binary(MC_MODULE, MC_VERSION, "mc", override_var="MC_BIN", what="the MinIO client mc")


def ensure_helm_binary() -> Path:
    """Path of the pinned ``helm`` (v3), ``go install``-ed on first use (``$HELM_BIN`` wins): the chart tests
    lint and render deploy/helm with it, and no Helm release is downloadable here but its Go module."""
    return go_install_binary(
        f"{HELM_MODULE}/cmd/helm", HELM_VERSION, "helm", override_var="HELM_BIN", what=f"Helm {HELM_VERSION}"
    )


def ensure_toxiproxy_binaries() -> tuple[Path, Path]:
    """Paths of the pinned Toxiproxy server and its CLI, ``go install``-ed on first use (``$TOXIPROXY_BIN`` and
    ``$TOXIPROXY_CLI_BIN`` win): ``devenv up --link`` and tests/wan put a region's traffic behind its proxies."""
    server = go_install_binary(
        f"{TOXIPROXY_MODULE}/cmd/server",
        TOXIPROXY_VERSION,
        "toxiproxy-server",
        override_var="TOXIPROXY_BIN",
        what=f"Toxiproxy {TOXIPROXY_VERSION}",
        installed_as="server",
    )
    cli = go_install_binary(
        f"{TOXIPROXY_MODULE}/cmd/cli",
        TOXIPROXY_VERSION,
        "toxiproxy-cli",
        override_var="TOXIPROXY_CLI_BIN",
        what=f"the Toxiproxy CLI {TOXIPROXY_VERSION}",
        installed_as="cli",
    )
    return server, cli


def ensure_prometheus_binary() -> Path:
    """Path of the pinned Prometheus server, ``go install``-ed on first use (``$PROMETHEUS_BIN`` wins): the metrics
    tests scrape the service with it and read the results back through its HTTP API (no web UI assets needed)."""
    return go_install_binary(
        f"{PROMETHEUS_MODULE}/cmd/prometheus",
        PROMETHEUS_VERSION,
        "prometheus",
        override_var="PROMETHEUS_BIN",
        what=f"Prometheus {PROMETHEUS_VERSION}",
        # Service discovery left out (the tests scrape static targets): with it, every cloud SDK is compiled in.
        tags="remove_all_sd",
        expect="~5 min on 2 cores",
    )


def ensure_promtool_binary() -> Path:
    """Path of the pinned ``promtool`` (``$PROMTOOL_BIN`` wins): tests/deploy checks and unit-tests the alert rules."""
    return go_install_binary(
        f"{PROMETHEUS_MODULE}/cmd/promtool",
        PROMETHEUS_VERSION,
        "promtool",
        override_var="PROMTOOL_BIN",
        what=f"promtool {PROMETHEUS_VERSION}",
        # Service discovery left out (the tests scrape static targets): with it, every cloud SDK is compiled in.
        tags="remove_all_sd",
        expect="~5 min on 2 cores",
    )


def go_install_binary(
    module: str,
    version: str,
    binary: str,
    *,
    override_var: str,
    what: str,
    expect: str = "a few minutes",
    tags: str = "",
    installed_as: str | None = None,
) -> Path:
    """A pinned ``go install``-ed binary in the cache, built once under a lock and renamed into place whole
    (with the build ``tags`` given, if any).

    ``$<override_var>`` names an existing executable to use instead. ``installed_as``: the name ``go install``
    gives it (the package directory's, e.g. ``server``) when that is not ``binary``.
    """
    override = os.environ.get(override_var)
    if override:
        return _existing(override, override_var)
    target_dir = cache_dir() / "bin" / f"{binary}-{version}"
    target = target_dir / binary
    if target.exists():
        return target
    with _build_lock(binary):
        if target.exists():
            return target
        go_version()
        staging = target_dir.with_name(f".{binary}-{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            _run_go(
                ["go", "install", *(["-tags", tags] if tags else []), f"{module}@{version}"],
                cwd=staging,
                what=what,
                expect=expect,
                extra_env={"GOBIN": str(staging)},
            )
            target_dir.mkdir(parents=True, exist_ok=True)
            (staging / (installed_as or binary)).replace(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target


def executable_from_env(path: str, var: str) -> Path:
    """``path`` (the value of ``$var``) when it is an executable file; a clear error otherwise."""
    return _existing(path, var)


def _existing(path: str, var: str) -> Path:
    p = Path(path).expanduser()
    if not (p.is_file() and os.access(p, os.X_OK)):
        raise DevenvError(f"{var}={path} is not an executable file")
    return p


@contextmanager
def _build_lock(name: str) -> Iterator[None]:
    lock_path = cache_dir() / "build" / f"{name}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run_go(
    argv: list[str], *, cwd: Path, what: str, expect: str = "a few minutes", extra_env: dict[str, str] | None = None
) -> None:
    """Run one Go build, saying on stderr what it builds, how long it may take (``expect``) and how long it took."""
    env = dict(os.environ)
    env.update(
        {
            "CGO_ENABLED": "0",
            # Never let `go` fetch a toolchain: the machine's Go must do.
            "GOTOOLCHAIN": "local",
            "GOFLAGS": "-mod=mod -buildvcs=false",
        }
    )
    if extra_env:
        env.update(extra_env)
    print(
        f"[devenv] building {what} from its Go module into {cache_dir()} (first run only, {expect})…",
        file=sys.stderr,
        flush=True,
    )
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
    if proc.returncode != 0:
        raise DevenvError(
            f"building {what} failed (`{' '.join(argv)}` in {cwd}, exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    print(f"[devenv] {what} ready ({time.monotonic() - start:.1f}s)", file=sys.stderr, flush=True)
