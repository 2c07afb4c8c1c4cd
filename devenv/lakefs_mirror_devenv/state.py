"""The dev environment's state file: what ``up`` started, read back by every later command.

Its own module so the commands that start the environment and the ones that read it (replication configs,
restarts) share one record without importing each other.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .build import cache_dir
from .link import Toxiproxy
from .processes import DevenvError
from .servers import LakeFSRegion, MinioInstance

__all__ = ["STATE_FILE", "Environment", "default_state_dir", "load_environment"]

STATE_FILE = "environment.json"


@dataclass
class Environment:
    """What ``up`` started, as read back from the state file."""

    state_dir: str
    regions: dict[str, LakeFSRegion] = field(default_factory=dict)
    minio: dict[str, MinioInstance] = field(default_factory=dict)
    postgres: dict[str, Any] | None = None
    #: DynamoDB Local, when started for the mirrors database: endpoint, pid and table name.
    dynamodb: dict[str, Any] | None = None
    #: Toxiproxy, when ``up`` was given links; ``links`` records each link and the names of its proxies.
    toxiproxy: Toxiproxy | None = None
    links: list[dict[str, Any]] = field(default_factory=list)

    def region(self, name: str) -> LakeFSRegion:
        try:
            return self.regions[name]
        except KeyError:
            raise DevenvError(f"no region {name!r} in this environment (have {sorted(self.regions)})") from None

    def to_json(self) -> dict[str, Any]:
        return {
            "state_dir": self.state_dir,
            "regions": {k: v.to_json() for k, v in self.regions.items()},
            "minio": {k: vars(v) for k, v in self.minio.items()},
            "postgres": self.postgres,
            "dynamodb": self.dynamodb,
            "toxiproxy": self.toxiproxy.to_json() if self.toxiproxy else None,
            "links": self.links,
        }

    def save(self) -> Path:
        path = Path(self.state_dir) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2))
        tmp.chmod(0o600)
        tmp.replace(path)
        return path

    def pids(self) -> list[int]:
        pids = [r.pid for r in self.regions.values()] + [m.pid for m in self.minio.values()]
        for server in (self.postgres, self.dynamodb):
            if server and server.get("pid"):
                pids.append(int(server["pid"]))
        if self.toxiproxy:
            pids.append(self.toxiproxy.pid)
        return pids

    def link_into(self, region: str) -> dict[str, Any] | None:
        """The link whose destination is ``region`` (at most one: a region's sync reads from one source per
        link), or None."""
        return next((link for link in self.links if link["dst"] == region), None)


def default_state_dir() -> Path:
    """``$LAKEFS_MIRROR_DEVENV`` or a ``devenv`` folder in the cache directory."""
    return Path(os.environ.get("LAKEFS_MIRROR_DEVENV") or cache_dir() / "devenv").expanduser()


def load_environment(state_dir: Path | None = None) -> Environment:
    state_dir = state_dir or default_state_dir()
    path = state_dir / STATE_FILE
    if not path.exists():
        raise DevenvError(f"no dev environment at {state_dir} (run `lakefs-mirror dev devenv up`)")
    raw = json.loads(path.read_text())
    return Environment(
        state_dir=raw["state_dir"],
        regions={k: LakeFSRegion(**v) for k, v in raw["regions"].items()},
        minio={k: MinioInstance(**v) for k, v in raw["minio"].items()},
        postgres=raw.get("postgres"),
        dynamodb=raw.get("dynamodb"),
        toxiproxy=Toxiproxy(**raw["toxiproxy"]) if raw.get("toxiproxy") else None,
        links=raw.get("links") or [],
    )
