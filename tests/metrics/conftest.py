"""Fixtures of the metrics tests: the region configs of the replication tests (real lakeFS regions)."""

from __future__ import annotations

from tests.replication.conftest import config_path, isolated_regions

__all__ = ["config_path", "isolated_regions"]
