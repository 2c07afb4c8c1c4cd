"""Jar sets resolved from Maven Central once, into the project cache (never ``~/.m2``), and reused.

Each set is described by a small generated pom whose runtime dependencies are the set; the pom's digest keys
the cache directory, so changing the pom fetches a new set and an unchanged one is found instantly. A fetch
runs under a file lock (two sessions never fetch at once) into a staging directory that is renamed into place
only when complete, so an interrupted fetch never leaves a half set behind. Used for hadoop-aws
(``hadoop_jars``) and DynamoDB Local (``dynamodb_local``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .build import _build_lock, cache_dir
from .processes import DevenvError

__all__ = ["DEPENDENCY_PLUGIN_VERSION", "ensure_maven_set"]

#: Pinned so that the resolution does not depend on Maven's built-in default plugin version.
DEPENDENCY_PLUGIN_VERSION = "3.8.1"
_MAVEN_TIMEOUT_S = 1200


def ensure_maven_set(name: str, version: str, pom: str, *, required: Sequence[str], what: str) -> Path:
    """The cached directory holding the runtime dependencies of ``pom`` (copied by ``copy-dependencies`` to
    ``jars/`` beside the pom), resolved with Maven on first use.

    ``required`` are file names that must be in the set (else the fetch failed in a way Maven did not report);
    ``what`` says in the progress line what is being fetched and why.
    """
    digest = hashlib.sha256(pom.encode()).hexdigest()[:12]
    target = cache_dir() / "jars" / f"{name}-{version}-{digest}"
    if target.is_dir():
        return _checked(target)
    with _build_lock(f"{name}-jars"):
        if target.is_dir():
            return _checked(target)
        staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            (staging / "pom.xml").write_text(pom)
            _run_maven(staging, what)
            jars = staging / "jars"
            for file_name in required:
                if not (jars / file_name).is_file():
                    raise DevenvError(f"Maven finished but {file_name} is not in {jars}")
            (staging / "pom.xml").replace(jars / "pom.xml")  # kept beside the jars: what produced them
            jars.replace(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return _checked(target)


def _checked(directory: Path) -> Path:
    if not any(directory.glob("*.jar")):
        raise DevenvError(f"{directory} holds no jars; remove it to fetch them again")
    return directory


def _run_maven(project: Path, what: str) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise DevenvError(
            f"Maven is not installed (no `mvn` on PATH); it fetches {what} from Maven Central "
            "(Debian: apt-get install maven)"
        )
    repo = cache_dir() / "maven" / "repository"
    argv = [
        mvn,
        "-q",
        "-B",
        "-Dstyle.color=never",
        f"-Dmaven.repo.local={repo}",
        "-f",
        str(project / "pom.xml"),
        "dependency:copy-dependencies",
    ]
    print(f"[dev] fetching {what} from Maven Central into {cache_dir() / 'jars'}", file=sys.stderr)
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=_MAVEN_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise DevenvError(f"Maven did not finish within {_MAVEN_TIMEOUT_S}s: {' '.join(argv)}") from exc
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr)[-4000:]
        raise DevenvError(f"Maven failed (exit {proc.returncode}): {' '.join(argv)}\n{output}")
    print(f"[dev] fetched {what} in {time.monotonic() - start:.0f}s", file=sys.stderr)
