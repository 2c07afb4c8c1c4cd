"""``lakefs-mirror dev demo``: two local lakeFS regions, a sample repository, a mirror converging, the proof.

Everything runs on this machine: lakeFS and its storage on the local blockstore, the mirrors database in a
SQLite file. The servers are stopped at the end unless ``--keep`` is given. The console shows the demo's own
lines only: Dagster's and Spark's output goes to ``demo.log`` in the state dir (``quiet.stderr_to``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.errors import LakeFSMirrorError
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService

from .. import DEFAULT_REGIONS, Environment, cache_dir, environment_up
from ..environment import stop_environment
from .quiet import stderr_to

__all__ = ["run_demo"]

SOURCE, MIRROR_REGION = "region-a", "region-b"
REPO, MIRROR = "sample", "sample-mirror"


def _say(message: str) -> None:
    print(message, flush=True)


def _populate(client: LakeFSClient) -> None:
    """A small lake: several commits on main, a dev branch merged back, a deleted file, two tags."""

    def put(branch: str, key: str, size: int) -> None:
        seed = hashlib.sha256(key.encode()).digest()
        client.upload_object(REPO, branch, key, (seed * (size // 32 + 1))[:size])

    for day in range(1, 5):
        for part in range(3):
            put("main", f"events/date=2026-11-0{day}/part-{part}.parquet", 2000 + 100 * part)
        client.commit(REPO, "main", f"events for 2026-11-0{day}", metadata={"pipeline": "ingest"})
    client.create_tag(REPO, "v1.0", "main")
    client.create_branch(REPO, "dev", "main")
    put("dev", "models/churn/model.json", 900)
    client.commit(REPO, "dev", "train churn model")
    client.delete_object(REPO, "main", "events/date=2026-11-01/part-0.parquet")
    client.commit(REPO, "main", "drop a bad partition")
    client.merge(REPO, "dev", "main")
    client.create_tag(REPO, "v1.1", "main")
    client.create_branch(REPO, "experiment", "dev")


def _summary(src: LakeFSClient, dst: LakeFSClient) -> tuple[str, bool]:
    rows, ok = [], True
    src_refs = [("branch", r) for r in src.list_branches(REPO)] + [("tag", r) for r in src.list_tags(REPO)]
    dst_refs = {(k, r.id): r.commit_id for k, r in [("branch", r) for r in dst.list_branches(MIRROR)]}
    dst_refs.update({("tag", r.id): r.commit_id for r in dst.list_tags(MIRROR)})
    for kind, ref in src_refs:
        mirrored = dst_refs.get((kind, ref.id))
        same = mirrored == ref.commit_id
        ok &= same
        rows.append(
            f"  {kind:6} {ref.id:12} {ref.commit_id[:16]}  {(mirrored or '-')[:16]}  {'match' if same else 'DIFFERENT'}"
        )
    objects_ok = all(
        dst.get_object(MIRROR, "main", o.path) == src.get_object(REPO, "main", o.path)
        for o in src.list_objects(REPO, "main")
    )
    ok &= objects_ok
    header = f"  {'ref':6} {'name':12} {'source commit':16}  {'mirror commit':16}"
    rows.append(f"  every object on main reads back identical from the mirror: {'yes' if objects_ok else 'NO'}")
    return "\n".join([header, *rows]), ok


def _create_mirror_through_api(service: ReplicationService, env: Environment) -> dict[str, Any]:
    """POST the mirror to the source region's replication API, as the reference's curl command does."""
    from lakefs_mirror_dagster.service import create_app, running_server

    from ..processes import free_port

    region = env.region(SOURCE)
    body = {
        "name": MIRROR,
        "region": MIRROR_REGION,
        "storage_namespace": env.region(MIRROR_REGION).namespace_for(MIRROR),
    }
    token = base64.b64encode(f"{region.access_key_id}:{region.secret_access_key}".encode()).decode()
    with running_server(create_app(service), "127.0.0.1", free_port()) as url:
        request = urllib.request.Request(
            f"{url}/service/replication/v1/repositories/{REPO}/mirrors",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Basic {token}"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            created: dict[str, Any] = json.loads(response.read())
    return created


def _converge_with_dagster(state_dir: Path, config_path: Path) -> str:
    """The sensors tick and their runs execute in-process on a real Dagster instance (as the daemon would)."""
    import logging
    import os

    import dagster as dg

    from .converge import run_until_converged

    logging.getLogger("dagster").setLevel(logging.WARNING)
    home = state_dir / "dagster_home"
    home.mkdir(exist_ok=True)
    # Telemetry off: nothing is sent, and a machine that never ran Dagster gets no banner among the demo's lines.
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    os.environ["LAKEFS_MIRROR_CONFIG"] = str(config_path)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = run_until_converged(
            instance, config_path=str(config_path), max_rounds=10, timeout_seconds=300, log_level="WARNING"
        )
    if not result.converged or result.failed:
        raise LakeFSMirrorError(f"Dagster did not converge the mirror: {result}")
    return f"{len(result.runs)} partitioned run(s) in {result.rounds} sensor round(s)"


def _validate_on_spark(config_path: Path) -> None:
    """The demo's commits are tiny, below ``spark.validation_threshold_ranges``: show Spark validating anyway
    (without its console progress bar: the demo prints its own lines)."""
    import yaml

    raw = yaml.safe_load(config_path.read_text())
    spark = raw.setdefault("spark", {})
    spark["validation_threshold_ranges"] = 0
    spark.setdefault("conf", {})["spark.ui.showConsoleProgress"] = "false"
    config_path.write_text(yaml.safe_dump(raw, sort_keys=False))


def _history(state_dir: Path) -> str:
    """The promotions Dagster recorded, read back from its event log."""
    import dagster as dg

    from lakefs_mirror_dagster.orchestration.history import mirror_history

    with dg.DagsterInstance.from_config(str(state_dir / "dagster_home")) as instance:
        moves = mirror_history(instance, MIRROR, limit=10)
    lines = ["[demo] promotions in the Dagster event log (newest first):"]
    lines += [
        f"  {m.branch:12} {m.action:8} -> {m.mirror_commit_id[:16]}  lag {m.lag_seconds or 0:.1f}s  run {m.run_id[:8]}"
        for m in moves
    ]
    return "\n".join(lines) if moves else ""


def run_demo(state_dir: Path | None = None, *, keep: bool = False) -> int:
    """Run the whole demo; returns 0 when every ref of the mirror matches the source."""
    state_dir = state_dir or cache_dir() / "demo"
    _say(f"[demo] starting two local lakeFS regions in {state_dir}")
    started = time.monotonic()
    env: Environment = environment_up(state_dir, DEFAULT_REGIONS)
    try:
        # Dagster's and Spark's own output goes to this file; the console shows the demo's lines only.
        log_path = Path(env.state_dir) / "demo.log"
        with stderr_to(log_path):
            for r in env.regions.values():
                _say(f"[demo]   {r.name}: {r.endpoint} (storage {r.namespace_root}, up in {r.startup_seconds:.1f}s)")
            _say(f"[demo]   Dagster's and Spark's own output: {log_path}")
            _validate_on_spark(Path(env.state_dir) / f"replication-{MIRROR_REGION}.yaml")
            source_svc = ReplicationService(load_config(Path(env.state_dir) / f"replication-{SOURCE}.yaml", env={}))
            mirror_svc = ReplicationService(
                load_config(Path(env.state_dir) / f"replication-{MIRROR_REGION}.yaml", env={})
            )
            src, dst = source_svc.client(SOURCE), mirror_svc.client(MIRROR_REGION)
            src.create_repository(REPO, env.region(SOURCE).namespace_for(REPO))
            _populate(src)
            _say(f"[demo] created repository {REPO} in {SOURCE}: branches main, dev, experiment; tags v1.0, v1.1")
            mirror = _create_mirror_through_api(source_svc, env)
            _say(
                f"[demo] created mirror {mirror['name']} (id {mirror['id']}) in {MIRROR_REGION} through the REST API; "
                "replicating"
            )
            t0 = time.monotonic()
            converged = _converge_with_dagster(
                Path(env.state_dir), Path(env.state_dir) / f"replication-{MIRROR_REGION}.yaml"
            )
            _say(f"[demo] mirror converged in {time.monotonic() - t0:.1f}s through Dagster: {converged}")
            history = _history(Path(env.state_dir))
            if history:
                _say(history)
            table, ok = _summary(src, dst)
            _say(table)
            read_only = dst.get_repository(MIRROR).read_only
            _say(f"[demo] mirror repository is read-only: {read_only}")
            _say(
                f"[demo] {'SUCCESS' if ok and read_only else 'FAILURE'}: mirror matches the source commit for commit "
                f"({time.monotonic() - started:.1f}s in all)"
            )
            source_svc.close()
            mirror_svc.close()
            if keep:
                _say(
                    f"[demo] servers left running; description: {env.state_dir}/environment.json; "
                    "stop them with `lakefs-mirror dev devenv down --state-dir " + env.state_dir + "`"
                )
            return 0 if ok and read_only else 1
    finally:
        if not keep:
            stop_environment(env)
            _say("[demo] servers stopped")
