"""Fixtures of the deployment tests: Helm, built from its Go module and cached like lakeFS."""

from __future__ import annotations

from pathlib import Path

import pytest
from lakefs_mirror_devenv import ensure_helm_binary

from tests.replication.conftest import config_path

__all__ = ["config_path"]


@pytest.fixture(scope="session")
def helm_bin() -> Path:
    """The pinned ``helm`` (a missing Go toolchain or a failed build is an error, never a skip)."""
    return ensure_helm_binary()
