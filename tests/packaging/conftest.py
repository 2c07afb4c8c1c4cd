"""Fixtures of the packaging tests: the wheel (built once per session) and a venv holding it with no extras,
installed where no C compiler can be found."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.replication.conftest import config_path, isolated_regions

from .wheel import build_wheel, make_venv

__all__ = ["config_path", "isolated_regions"]

#: The commands a build of a C extension would look for; none may be on the core venv's PATH.
COMPILERS = ("cc", "gcc", "clang", "c++", "g++")


@pytest.fixture(scope="session")
def wheel() -> Path:
    return build_wheel()


@pytest.fixture(scope="session")
def no_compiler_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """This environment with PATH reduced to an empty directory and CC/CXX pointing nowhere: pip can install
    wheels, but nothing it would have to compile can be built."""
    empty = tmp_path_factory.mktemp("path-without-compilers")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=str(empty), CC="/nonexistent/cc", CXX="/nonexistent/c++")
    assert not [c for c in COMPILERS if shutil.which(c, path=env["PATH"])], "a compiler is still on PATH"
    return env


@pytest.fixture(scope="session")
def core_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path, no_compiler_env: dict[str, str]) -> Path:
    """The wheel installed with no extras (an S3/MinIO/local-disk user's install), no compiler on PATH;
    the venv's ``bin``."""
    return make_venv(tmp_path_factory.mktemp("venv-core") / "venv", wheel, env=no_compiler_env)
