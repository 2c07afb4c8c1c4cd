"""The Dagster code location (``workspace.yaml`` and ``[tool.dg]`` point here).

Loading does no network I/O: mirrors are discovered by sensors at tick time, not at import.
"""

from __future__ import annotations

import dagster as dg

from .devenv import LAKEFS_VERSION


@dg.asset(description="Which lakeFS release this code location was built and tested against.")
def lakefs_server_version() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"lakefs_version": LAKEFS_VERSION})


defs = dg.Definitions(assets=[lakefs_server_version])

__all__ = ["defs"]
