"""Which servers each ``scripts/dev`` command builds from their Go modules, and the entry point that builds them.

The builds need only Go and the cache directory, not the virtual environment, so ``scripts/dev`` runs this
module with the system Python (``python -m lakefs_mirror_devenv.dev_builds demo``) while pip installs the
package: this package imports nothing outside the standard library at import time. The demo needs only lakeFS
(its regions are on the local blockstore, its mirrors database is a SQLite file); the tests need everything.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from .build import (
    ensure_helm_binary,
    ensure_lakefs_binary,
    ensure_mc_binary,
    ensure_minio_binary,
    ensure_prometheus_binary,
    ensure_promtool_binary,
    ensure_toxiproxy_binaries,
)
from .environment import DEFAULT_REGIONS, RegionSpec
from .processes import DevenvError

__all__ = ["BUILDERS", "builds_for", "builds_for_regions", "main"]

#: Every Go-built server, in build order: lakeFS first (every command needs it).
BUILDERS: dict[str, Callable[[], Path]] = {
    "lakeFS": ensure_lakefs_binary,
    "MinIO": ensure_minio_binary,
    # The MinIO client: the tests set up MinIO bucket replication with it.
    "mc": ensure_mc_binary,
    # Helm: the chart tests (tests/deploy) lint and render deploy/helm with it.
    "Helm": ensure_helm_binary,
    # Toxiproxy (server and CLI): tests/wan run syncs over a simulated link through it.
    "Toxiproxy": lambda: ensure_toxiproxy_binaries()[0],
    # Prometheus scrapes the service in tests/metrics; promtool checks deploy/prometheus's alert rules.
    "Prometheus": ensure_prometheus_binary,
    "promtool": ensure_promtool_binary,
}


def builds_for_regions(regions: Sequence[RegionSpec]) -> tuple[str, ...]:
    """The servers an environment of ``regions`` starts: lakeFS, and MinIO when a region is on it."""
    return ("lakeFS", "MinIO") if any(r.minio is not None for r in regions) else ("lakeFS",)


def builds_for(command: str) -> tuple[str, ...]:
    """The servers ``scripts/dev <command>`` builds: the demo's (it runs ``DEFAULT_REGIONS``), or all of them."""
    if command == "demo":
        return builds_for_regions(DEFAULT_REGIONS)
    if command in ("setup", "test"):
        return tuple(BUILDERS)
    raise DevenvError(f"unknown scripts/dev command {command!r} (expected demo, setup or test)")


def _stop(signum: int, _frame: FrameType | None) -> None:
    # `scripts/dev` sends SIGTERM when the other half (pip) failed: exiting through SystemExit lets
    # subprocess.run kill the Go build it is waiting for instead of leaving it running.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Build what ``argv[0]`` (a ``scripts/dev`` command) needs; an error is one ``[dev]`` block on stderr, exit 1.

    The builders print their own progress lines, and only when they build: a second run prints nothing.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m lakefs_mirror_devenv.dev_builds demo|setup|test", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop)
    try:
        for name in builds_for(args[0]):
            BUILDERS[name]()
    except DevenvError as exc:
        print(f"[dev] {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
