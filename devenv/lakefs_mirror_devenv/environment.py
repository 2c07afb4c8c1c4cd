"""``devenv up|status|down``: a multi-region lakeFS environment described in one JSON file.

The layout is a list of regions, each on the local blockstore or on a MinIO server. Regions naming the
same MinIO server share it (one bucket each); different MinIO names are different servers with different
credentials, which is how "another S3 endpoint" is exercised. The state file is the single source of truth
for what was started: ``down`` stops exactly the pids recorded there.
"""

from __future__ import annotations

import re
import secrets
import shutil
import signal
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .link import LinkSpec, start_toxiproxy
from .processes import DevenvError, pid_alive, stop_pid
from .replication_config import write_replication_configs
from .servers import start_lakefs, start_minio
from .state import STATE_FILE, Environment, default_state_dir, load_environment

__all__ = [
    "DEFAULT_REGIONS",
    "DEVENV_TABLE",
    "RegionSpec",
    "environment_down",
    "environment_status",
    "environment_up",
    "parse_region_spec",
    "stop_environment",
]

#: The mirrors table in the environment's DynamoDB Local (created by the first replication service).
DEVENV_TABLE = "lakefs-mirrors"
# S3's bucket naming rule, which MinIO enforces too; a region on MinIO stores its data in a bucket of its name.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_BUCKET_RULE = "3-63 lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit, no '..'"


@dataclass(frozen=True)
class RegionSpec:
    """One region to start: ``storage`` is ``local`` or ``s3:<minio-name>``."""

    name: str
    storage: str = "local"

    def __post_init__(self) -> None:
        """Refuse a MinIO region whose name cannot be a bucket name before any server starts."""
        if self.minio is not None and (not _BUCKET_NAME.match(self.name) or ".." in self.name):
            raise DevenvError(
                f"region {self.name!r} on {self.storage}: its bucket is named after the region, and a bucket "
                f"name must be {_BUCKET_RULE}"
            )

    @property
    def minio(self) -> str | None:
        return self.storage.split(":", 1)[1] if self.storage.startswith("s3:") else None


DEFAULT_REGIONS = (RegionSpec("region-a"), RegionSpec("region-b"))


def parse_region_spec(text: str) -> RegionSpec:
    """Parse ``NAME[=local|=s3:MINIO]`` as given on the command line."""
    name, _, storage = text.partition("=")
    storage = storage or "local"
    if not name or not (storage == "local" or (storage.startswith("s3:") and len(storage) > 3)):
        raise DevenvError(f"bad region spec {text!r}: expected NAME, NAME=local or NAME=s3:MINIO_NAME")
    return RegionSpec(name, storage)


def environment_up(
    state_dir: Path | None = None,
    regions: tuple[RegionSpec, ...] = DEFAULT_REGIONS,
    *,
    with_postgres: bool = False,
    with_dynamodb: bool = False,
    fresh: bool = True,
    links: tuple[LinkSpec, ...] = (),
    lakefs_on_postgres: tuple[str, ...] = (),
) -> Environment:
    """Start MinIO servers, lakeFS regions (and optionally PostgreSQL or DynamoDB Local, which the regions'
    replication configs then use as their mirrors database); write the state file.

    ``links``: put what each link's destination reads from its source behind Toxiproxy (see ``link.py``).
    ``lakefs_on_postgres``: regions whose lakeFS runs on the environment's PostgreSQL (a database of its own,
    ``lakefs_<region>``) instead of local KV, as production lakeFS does; their replication configs then set
    ``refstore_database`` to it, so commit records are written there in batches. PostgreSQL is started for them
    even without ``with_postgres``, which alone makes it the mirrors database too.

    If anything fails half-way, what was already started is stopped again before the error propagates.
    """
    if with_postgres and with_dynamodb:
        raise DevenvError("choose one shared mirrors database: PostgreSQL or DynamoDB Local, not both")
    state_dir = (state_dir or default_state_dir()).resolve()
    if (state_dir / STATE_FILE).exists():
        existing = load_environment(state_dir)
        if any(pid_alive(p) for p in existing.pids()):
            raise DevenvError(f"a dev environment is already running at {state_dir}; run `devenv down` first")
    if len({r.name for r in regions}) != len(regions):
        raise DevenvError("region names must be unique")
    _check_links(links, regions)
    databases = _lakefs_databases(lakefs_on_postgres, regions, fresh=fresh)
    if fresh and state_dir.exists():
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    env = Environment(state_dir=str(state_dir))
    auth_secret = secrets.token_hex(16)  # one organisation: every region's lakeFS has the same key
    try:
        if links:
            env.toxiproxy = start_toxiproxy(state_dir / "toxiproxy")
            env.save()
        postgres = None
        if with_postgres or databases:
            from .postgres import PostgresServer

            postgres = PostgresServer.start(state_dir / "postgres")
            env.postgres = {"url": postgres.url, "pid": postgres.pid, "mirrors_database": with_postgres}
            env.save()
        for spec in regions:
            minio = None
            if spec.minio is not None:
                minio = env.minio.get(spec.minio)
                if minio is None:
                    minio = start_minio(spec.minio, state_dir / "minio" / spec.minio)
                    env.minio[spec.minio] = minio
                    env.save()
            link = next((lk for lk in links if lk.src == spec.name), None)
            store_proxy = None
            if link is not None and minio is not None:
                assert env.toxiproxy is not None
                store_proxy = env.toxiproxy.add_proxy(f"{spec.name}-store", _host_port(minio.endpoint))
                env.toxiproxy.shape(f"{spec.name}-store", link)
            database = None
            if spec.name in databases:
                assert postgres is not None
                postgres.make_database(databases[spec.name])
                database = {
                    "type": "postgres",
                    "postgres": {"connection_string": postgres.libpq_url_for(databases[spec.name])},
                }
            env.regions[spec.name] = start_lakefs(
                spec.name,
                state_dir / "regions" / spec.name,
                minio=minio,
                auth_secret=auth_secret,
                pre_signed_endpoint=f"http://{store_proxy}" if store_proxy else None,
                database=database,
            )
            env.save()
        for link in links:
            env.links.append(_link_proxies(env, link))
            env.save()
        if with_dynamodb:
            from .dynamodb_local import DynamoDBLocal

            dynamodb = DynamoDBLocal.start(state_dir / "dynamodb", state_dir=state_dir / "dynamodb" / "data")
            env.dynamodb = {"endpoint": dynamodb.endpoint, "pid": dynamodb.pid, "table_name": DEVENV_TABLE}
            env.save()
    except BaseException:
        stop_environment(env)
        raise
    env.save()
    write_replication_configs(env)
    return env


def _check_links(links: tuple[LinkSpec, ...], regions: tuple[RegionSpec, ...]) -> None:
    """Refuse, before anything starts, links naming unknown regions, two links into one region, two links out
    of one region, or ``source_stores`` / ``dest_store`` of a region on the local blockstore (a directory, not a
    network)."""
    by_name = {r.name: r for r in regions}
    for link in links:
        for end in (link.src, link.dst):
            if end not in by_name:
                raise DevenvError(f"link {link.src}->{link.dst}: no region {end!r} (have {sorted(by_name)})")
        for key, end in (("source_stores", link.src), ("dest_store", link.dst)):
            if getattr(link, key) and by_name[end].minio is None:
                raise DevenvError(
                    f"link {link.src}->{link.dst}: {key}=on needs {end} on MinIO (NAME=s3:MINIO); "
                    "a local blockstore is a directory, which no link can slow down"
                )
    for end in ("src", "dst"):
        names = [getattr(link, end) for link in links]
        if len(set(names)) != len(names):
            raise DevenvError(f"at most one link per {'source' if end == 'src' else 'destination'} region")


def _lakefs_databases(names: tuple[str, ...], regions: tuple[RegionSpec, ...], *, fresh: bool) -> dict[str, str]:
    """Region -> the PostgreSQL database of its lakeFS, for ``lakefs_on_postgres``; refused before anything starts
    when a name is no region, or when the environment is not fresh (lakeFS is set up once, on an empty database)."""
    known = [r.name for r in regions]
    databases: dict[str, str] = {}
    for name in names:
        if name not in known:
            raise DevenvError(f"lakeFS on PostgreSQL: no region {name!r} (have {sorted(known)})")
        databases[name] = ("lakefs_" + re.sub(r"[^a-z0-9_]", "_", name.lower()))[:63]
    if len(set(databases.values())) != len(databases):
        raise DevenvError(f"lakeFS on PostgreSQL: regions {sorted(databases)} need databases of distinct names")
    if databases and not fresh:
        raise DevenvError(
            "lakeFS on PostgreSQL needs a fresh environment (fresh=True): it is set up on an empty database"
        )
    return databases


def _host_port(endpoint: str) -> str:
    return endpoint.split("://", 1)[-1].rstrip("/")


def _link_proxies(env: Environment, link: LinkSpec) -> dict[str, Any]:
    """The source lakeFS's proxy of ``link`` (the source store's was made before its lakeFS started) and, with
    ``dest_store``, the destination store's (only its sync's config names it: its lakeFS stays next to it); the
    link's record."""
    assert env.toxiproxy is not None
    proxies = {"lakefs": f"{link.src}-lakefs"}
    env.toxiproxy.add_proxy(proxies["lakefs"], _host_port(env.region(link.src).endpoint))
    env.toxiproxy.shape(proxies["lakefs"], link)
    if f"{link.src}-store" in env.toxiproxy.proxies:
        proxies["store"] = f"{link.src}-store"
    dst_minio = env.region(link.dst).minio
    if link.dest_store and dst_minio is not None:
        proxies["dest_store"] = f"{link.dst}-dest-store"
        env.toxiproxy.add_proxy(proxies["dest_store"], _host_port(env.minio[dst_minio].endpoint))
        env.toxiproxy.shape(proxies["dest_store"], link)
    return {**asdict(link), "proxies": proxies}


def environment_status(state_dir: Path | None = None) -> dict[str, Any]:
    """Health of every recorded server: pid alive and, for lakeFS, ``/_health`` answering."""
    env = load_environment(state_dir)
    report: dict[str, Any] = {"state_dir": env.state_dir, "regions": {}, "minio": {}}
    for name, region in env.regions.items():
        report["regions"][name] = {
            "endpoint": region.endpoint,
            "storage": region.namespace_root,
            "pid": region.pid,
            "alive": pid_alive(region.pid),
            "healthy": _healthy(f"{region.endpoint}/_health"),
        }
    for name, minio in env.minio.items():
        report["minio"][name] = {
            "endpoint": minio.endpoint,
            "pid": minio.pid,
            "alive": pid_alive(minio.pid),
            "healthy": _healthy(f"{minio.endpoint}/minio/health/live"),
        }
    if env.postgres:
        report["postgres"] = {"pid": env.postgres["pid"], "alive": pid_alive(int(env.postgres["pid"]))}
    if env.toxiproxy:
        report["toxiproxy"] = {
            "api": env.toxiproxy.api,
            "pid": env.toxiproxy.pid,
            "alive": pid_alive(env.toxiproxy.pid),
            "proxies": env.toxiproxy.proxies,
        }
    if env.dynamodb:
        report["dynamodb"] = {
            "endpoint": env.dynamodb["endpoint"],
            "pid": env.dynamodb["pid"],
            "alive": pid_alive(int(env.dynamodb["pid"])),
        }
    return report


def environment_down(state_dir: Path | None = None) -> list[int]:
    """Stop every process the state file records; returns the pids that were stopped."""
    env = load_environment(state_dir)
    return stop_environment(env)


def stop_environment(env: Environment) -> list[int]:
    """Stop every process ``env`` records (lakeFS first); returns the pids that were stopped."""
    stopped = []
    postgres_pid = int(env.postgres["pid"]) if env.postgres else None
    # lakeFS first (it writes to MinIO), then MinIO and PostgreSQL (SIGINT: its fast shutdown mode).
    for pid in env.pids():
        if pid_alive(pid):
            stop_pid(pid, sig=signal.SIGINT if pid == postgres_pid else signal.SIGTERM)
            stopped.append(pid)
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in stopped) and time.monotonic() < deadline:
        time.sleep(0.1)
    return stopped


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return 200 <= resp.status < 300
    except OSError:
        return False
