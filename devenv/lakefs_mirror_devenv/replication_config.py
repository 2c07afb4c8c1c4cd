"""Replication configs for the regions of a dev environment, as a user would write them.

Every region gets ``replication-<region>.yaml`` in the state dir: its own lakeFS as ``regional_endpoint``,
the others in ``dst_endpoints``, its blockstore exactly as its lakeFS has it, the admin credentials of each
region, and one mirrors database shared by all regions (a SQLite file by default, PostgreSQL or DynamoDB
Local if the environment runs one as such). A region whose lakeFS runs on PostgreSQL (``environment_up``'s
``lakefs_on_postgres``) gets ``refstore_database``: that lakeFS's own database, as in production. A region at the
end of a link (``devenv up --link SRC->DST:...``) reaches its link's source through the link's proxies:
``dst_endpoints`` names the source lakeFS's proxy, with ``source_stores=on`` ``source_stores`` names the source
store's, and with ``dest_store=on`` its own ``blockstore`` (what its sync writes to) names its own store's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .state import Environment

__all__ = ["config_variant", "dynamodb_local_settings", "replication_config_dict", "write_replication_configs"]


def dynamodb_local_settings(dynamodb: dict[str, Any]) -> dict[str, Any]:
    """``mirrors_database.dynamodb`` for the environment's DynamoDB Local (any keys and region work there)."""
    from .dynamodb_local import ACCESS_KEY_ID, AWS_REGION, SECRET_ACCESS_KEY

    return {
        "table_name": dynamodb["table_name"],
        "aws_region": AWS_REGION,
        "endpoint": dynamodb["endpoint"],
        "aws_access_key_id": ACCESS_KEY_ID,
        "aws_secret_access_key": SECRET_ACCESS_KEY,
    }


def replication_config_dict(env: Environment, region: str, *, mirrors_url: str | None = None) -> dict[str, Any]:
    """The config of ``region`` as plain data (contains credentials: keep the file private)."""
    me = env.region(region)
    others = {name: r for name, r in env.regions.items() if name != region}
    if mirrors_url is None and env.postgres and env.postgres.get("mirrors_database", True):
        mirrors_url = str(env.postgres["url"])
    database: dict[str, Any]
    if mirrors_url and mirrors_url.startswith("postgresql"):
        database = {"type": "postgres", "postgres": {"connection_string": mirrors_url}}
    elif mirrors_url is None and env.dynamodb:
        database = {"type": "dynamodb", "dynamodb": dynamodb_local_settings(env.dynamodb)}
    else:
        database = {"type": "sqlite", "sqlite": {"path": str(Path(env.state_dir) / "mirrors.db")}}
    endpoints = {name: r.endpoint for name, r in others.items()}
    source_stores: dict[str, Any] = {}
    blockstore = me.blockstore
    link = env.link_into(region)
    if link is not None and env.toxiproxy is not None:
        proxies = env.toxiproxy.proxies
        endpoints[link["src"]] = f"http://{proxies[link['proxies']['lakefs']]}"
        if link["source_stores"]:
            source_stores[link["src"]] = _through(env.region(link["src"]).blockstore, proxies[link["proxies"]["store"]])
        if "dest_store" in link["proxies"]:
            blockstore = _through(blockstore, proxies[link["proxies"]["dest_store"]])
    config: dict[str, Any] = {
        "region": region,
        "organization_id": "devenv",
        "regional_endpoint": me.endpoint,
        "dst_endpoints": endpoints,
        "mirrors_database": database,
        "blockstore": blockstore,
        "auth": {"encrypt": {"secret_key": me.auth_secret_key}},
        "listen_address": "127.0.0.1:8008",
        "lakefs": {"access_key_id": me.access_key_id, "secret_access_key": me.secret_access_key},
        "region_credentials": {
            name: {"access_key_id": r.access_key_id, "secret_access_key": r.secret_access_key}
            for name, r in others.items()
        },
        "commit_sensor": {"process_branches_duration": "5s"},
        "mirrors_manager": {"process_mirrors_interval_duration": "5s"},
        # A local environment retries a blocked branch at the next pass (the production default waits a minute);
        # the tests of the cooldowns set their own.
        "validator": {"run_interval": "2s", "cooldown_on_missing": "0s", "cooldown_on_error": "0s"},
        "spark": {"master": "local[2]"},
    }
    if source_stores:
        config["source_stores"] = source_stores
    if me.database is not None:
        config["refstore_database"] = me.database
    return config


def _through(blockstore: dict[str, Any], listen: str) -> dict[str, Any]:
    """An S3 ``blockstore`` reached through the proxy listening at ``listen`` (the same bucket and keys)."""
    return {**blockstore, "s3": {**blockstore["s3"], "endpoint": f"http://{listen}"}}


def write_replication_configs(env: Environment, *, mirrors_url: str | None = None) -> dict[str, Path]:
    """Write one config file per region into the state dir; returns region -> path."""
    import yaml  # here, not at the top: scripts/dev imports this package before the venv exists (stdlib only)

    paths = {}
    for region in env.regions:
        path = Path(env.state_dir) / f"replication-{region}.yaml"
        path.write_text(yaml.safe_dump(replication_config_dict(env, region, mirrors_url=mirrors_url), sort_keys=False))
        path.chmod(0o600)
        paths[region] = path
    return paths


def config_variant(base: Path, out: Path, *, without: tuple[str, ...] = (), **sections: dict[str, Any]) -> Path:
    """A copy of the config ``base`` at ``out`` (private) with the given keys of each section replaced, e.g.
    ``commit_sensor={"process_branches_duration": "2s"}``; the section's other keys are kept. ``without``: sections
    left out (``refstore_database``: commit records through lakeFS's API)."""
    import yaml  # see write_replication_configs

    data = yaml.safe_load(base.read_text())
    for name in without:
        data.pop(name, None)
    for name, values in sections.items():
        data[name] = {**(data.get(name) or {}), **values}
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    out.chmod(0o600)
    return out
