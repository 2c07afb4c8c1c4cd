"""No secret from the config, and no presigned-URL signature, ever appears in what our programs print or answer.

A full run: `lakefs-mirror` CLI commands (syncs, mirror listings, and failures caused by wrong credentials,
whose error messages are where secrets tend to leak; logs as text, and as JSON lines down to DEBUG with
tracebacks), the REST API served by `lakefs-mirror serve` (every endpoint, good and bad requests, response
bodies and headers, and the server's own output), and one Dagster run of a mirror asset (its event log, run
storage and captured compute logs). Everything is searched for every secret of the environment: lakeFS
access-key secrets and encryption keys, MinIO secret keys, the PostgreSQL password, the HTTP Basic token, and
for ``X-Amz-Signature`` / ``X-Amz-Credential``. lakeFS's, MinIO's and PostgreSQL's own logs are not ours and
are not searched. The outputs of every sync the fault suite ran before this test are searched too.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv.processes import free_port, wait_http_ok

from .rig import DST, SRC, FaultRig
from .workload import content

pytestmark = pytest.mark.integration

_MARKERS = ("x-amz-signature", "x-amz-credential")
_API = "/service/replication/v1"
_JSON_DEBUG = {"REPLICATION_LOGGING_FORMAT": "json", "REPLICATION_LOGGING_LEVEL": "DEBUG"}


def _secrets(rig: FaultRig) -> dict[str, str]:
    """Label -> secret value for everything secret in the environment and both regions' configs."""
    env = rig.env
    found: dict[str, str] = {}
    for name, region in env.regions.items():
        found[f"lakeFS secret access key of {name}"] = region.secret_access_key
        found[f"lakeFS auth.encrypt.secret_key of {name}"] = region.auth_secret_key
        token = base64.b64encode(f"{region.access_key_id}:{region.secret_access_key}".encode()).decode()
        found[f"HTTP Basic token for {name}"] = token
    for name, minio in env.minio.items():
        found[f"MinIO secret key of {name}"] = minio.secret_key
    assert env.postgres is not None
    found["PostgreSQL password"] = urllib.parse.urlsplit(str(env.postgres["url"])).password or ""

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, str) and any(w in path.lower() for w in ("secret", "password")):
            found[f"config {path}"] = node
        elif isinstance(node, str) and "connection_string" in path:
            found[f"config {path} password"] = urllib.parse.urlsplit(node).password or ""

    for region in (SRC, DST):
        walk(yaml.safe_load(rig.config_path(region).read_text()), region)
    return {label: value for label, value in found.items() if len(value) >= 8}


def _leaks(where: str, text: str, secrets: dict[str, str]) -> list[str]:
    leaks = [f"{label} appeared in {where}" for label, value in secrets.items() if value in text]
    lowered = text.lower()
    return leaks + [f"presigned-URL marker {m!r} appeared in {where}" for m in _MARKERS if m in lowered]


def _cli(rig: FaultRig, region: str, *args: str) -> tuple[int, str]:
    """`python -m lakefs_mirror_dagster.cli --config <region> ...` exactly as a user runs it."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("REPLICATION_", "LAKEFS_MIRROR_FAILPOINT"))}
    proc = subprocess.run(
        [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(rig.config_path(region)), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _request(
    url: str, *, auth: str | None, method: str = "GET", body: dict[str, Any] | None = None
) -> tuple[int, str, str]:
    """One HTTP request; returns status, the response's headers as text, and its body."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if auth is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, str(resp.headers), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, str(exc.headers), exc.read().decode(errors="replace")


def _run_cli(rig: FaultRig, repo: str, mirror: str) -> list[tuple[str, str]]:
    """CLI commands that succeed, and ones that fail on a wrong credential (errors are where secrets leak).

    The first runs as its own `python -m` process; the others are the same ``main`` forked from the suite's
    zygote (``rig.run_cli``), which saves a Python start-up each.
    """
    code, out = _cli(rig, DST, "sync", "--once", "--mirror", mirror)
    outputs = [(f"CLI `sync` (exit {code})", out)]
    assert code == 0, out
    # New data, so that the syncs with wrong credentials below really write (and fail).
    rig.client(SRC).upload_object(repo, "main", "data/more.bin", content("data/more.bin", 600))
    rig.client(SRC).commit(repo, "main", "one more, for the failing syncs")
    wrong = "WrongSecret0123456789abcdef"
    db_url = urllib.parse.urlsplit(str(rig.env.postgres["url"] if rig.env.postgres else ""))
    bad_db = db_url._replace(netloc=f"{db_url.username}:{wrong}@{db_url.hostname}:{db_url.port}").geturl()
    runs: list[tuple[str, str, list[str], dict[str, str]]] = [
        ("mirrors list", SRC, ["mirrors", "list", "--json", "--repository", repo], {}),
        ("sync with a wrong lakeFS secret", DST, ["sync", "--once"], {"REPLICATION_LAKEFS_SECRET_ACCESS_KEY": wrong}),
        (
            "sync with a wrong MinIO secret",
            DST,
            ["sync", "--once", "--mirror", mirror],
            {"REPLICATION_BLOCKSTORE_S3_CREDENTIALS_SECRET_ACCESS_KEY": wrong},
        ),
        (
            "sync with a wrong database password",
            DST,
            ["sync", "--once"],
            {"REPLICATION_MIRRORS_DATABASE_POSTGRES_CONNECTION_STRING": bad_db},
        ),
        (
            "sync with a wrong lakeFS secret, JSON logs at DEBUG (tracebacks included)",
            DST,
            ["sync", "--once"],
            {"REPLICATION_LAKEFS_SECRET_ACCESS_KEY": wrong, **_JSON_DEBUG},
        ),
        ("sync, JSON logs at DEBUG", DST, ["sync", "--once", "--mirror", mirror], _JSON_DEBUG),  # the new commit
        ("sync --json", DST, ["sync", "--once", "--json", "--mirror", mirror], {}),
    ]
    for label, region, args, env in runs:
        result = rig.run_cli(region, *args, env=env)
        outputs.append((f"CLI `{label}` (exit {result.returncode})", result.output))
        if env.get("REPLICATION_LOGGING_FORMAT") == "json":  # the JSON formatter really ran, tracebacks and all
            assert '"logger": "lakefs_mirror_dagster.' in result.output, result.output
        if label == "mirrors list":
            [doc] = [m for m in json.loads(result.output) if m["name"] == mirror]
            got = rig.run_cli(SRC, "mirrors", "get", "--json", doc["id"])
            outputs.append((f"CLI `mirrors get` (exit {got.returncode})", got.output))
    return outputs


def _run_api(rig: FaultRig, repo: str, mirror: str, tmp: Path) -> list[tuple[str, str]]:
    """`lakefs-mirror serve` for the source region, every endpoint with good and bad requests."""
    region = rig.env.region(SRC)
    auth = f"{region.access_key_id}:{region.secret_access_key}"
    port = free_port()
    log_path = tmp / "serve.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REPLICATION_")}
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(rig.config_path(SRC)), "serve",
             "--listen", f"127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, env=clean,
        )  # fmt: skip
    outputs = []
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http_ok(f"{base}/_health", timeout_s=120, process=server, log_path=log_path)
        listing = f"{base}{_API}/repositories/{repo}/mirrors"
        code, _, text = _request(listing, auth=auth)
        assert code == 200, text
        mirror_id = next(m["id"] for m in json.loads(text)["results"] if m["name"] == mirror)
        calls: list[tuple[str, str, str | None, dict[str, Any] | None]] = [
            ("GET", listing, auth, None),
            ("GET", f"{listing}/{mirror_id}", auth, None),
            ("GET", f"{base}{_API}/config/storages", auth, None),
            ("POST", listing, auth, {"name": f"{mirror}-2", "region": DST,
                                     "storage_namespace": rig.env.region(DST).namespace_for(f"{mirror}-2")}),
            ("POST", listing, auth, {"name": mirror, "region": DST, "storage_namespace": "s3://x/y"}),
            ("POST", listing, auth, {"name": "Bad Name!", "region": "nowhere"}),
            ("GET", f"{listing}/no-such-id", auth, None),
            ("GET", listing, f"{region.access_key_id}:WrongSecret0123456789", None),
            ("GET", listing, None, None),
            ("GET", f"{base}{_API}/repositories/no-such-repo/mirrors", auth, None),
        ]  # fmt: skip
        for method, url, who, body in calls:
            code, headers, text = _request(url, auth=who, method=method, body=body)
            outputs.append((f"API {method} {url.removeprefix(base)} -> {code}", f"{headers}\n{text}"))
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
    outputs.append(("the API server's output", log_path.read_text(errors="replace")))
    return outputs


def _run_dagster(rig: FaultRig, mirror: str, tmp: Path) -> list[tuple[str, str]]:
    """One real materialization of the mirror's branch asset (Spark validation), and what Dagster kept of it."""
    import dagster as dg
    from dagster._serdes import serialize_value

    from lakefs_mirror_dagster.config import load_config
    from lakefs_mirror_dagster.orchestration.definitions import build_definitions
    from lakefs_mirror_dagster.orchestration.mirroring import branch_partitions_name, build_branch_heads_asset

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    home = tmp / "dagster_home"
    home.mkdir()
    config_path = rig.config_path(DST)
    defs = build_definitions(
        [mirror],
        config=load_config(config_path, env={}),
        config_path=str(config_path),
        reload=None,
        spark_conf={"spark.master": "local[1]", "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                    "spark.driver.bindAddress": "127.0.0.1"},
    )  # fmt: skip
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        instance.add_dynamic_partitions(branch_partitions_name(mirror), ["main"])  # what the commit sensor does
        result = dg.materialize(
            [build_branch_heads_asset(mirror)],
            instance=instance,
            partition_key="main",
            resources=dict(defs.resources or {}),
            raise_on_error=False,
        )
        assert result.success, [str(e) for e in result.all_events if e.is_failure]
        events = "\n".join(serialize_value(e) for e in instance.all_logs(result.run_id))
        outputs = [("the Dagster event log", events)]
        run = instance.get_run_by_id(result.run_id)
        outputs.append(("the Dagster run record", serialize_value(run)))
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        outputs.append((f"Dagster storage file {path.relative_to(home)}", path.read_bytes().decode(errors="replace")))
    return outputs


def test_no_secret_in_outputs_api_answers_or_dagster_event_log(
    rig: FaultRig, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    secrets = _secrets(rig)
    assert len(secrets) >= 8, sorted(secrets)
    label, value = next(iter(secrets.items()))
    probe = _leaks("a probe", f"error: {value}; X-Amz-Signature=abc", secrets)
    assert f"{label} appeared in a probe" in probe
    assert "presigned-URL marker 'x-amz-signature' appeared in a probe" in probe
    pair = rig.new_pair("secrets")
    for i in range(3):
        key = f"data/s-{i}.bin"
        pair.src.upload_object(pair.repo, "main", key, content(key, 400 + i))
    pair.src.commit(pair.repo, "main", "three objects")
    pair.src.create_tag(pair.repo, "v1", "main")

    outputs = list(rig.outputs)  # every sync the fault suite ran before this test
    outputs += _run_cli(rig, pair.repo, pair.mirror)
    outputs += _run_api(rig, pair.repo, pair.mirror, tmp_path)
    pair.src.upload_object(pair.repo, "main", "data/late.bin", content("data/late.bin", 900))
    pair.src.commit(pair.repo, "main", "one more, for the Dagster run")
    capfd.readouterr()
    outputs += _run_dagster(rig, pair.mirror, tmp_path)
    captured = capfd.readouterr()
    outputs.append(("this process's stdout/stderr during the Dagster run", captured.out + captured.err))

    leaks = [leak for where, text in outputs for leak in _leaks(where, text, secrets)]
    total = sum(len(text) for _, text in outputs)
    print(
        f"\n[faults] secret scan: {len(secrets)} secrets x {len(outputs)} outputs ({total} characters) "
        f"in {time.monotonic() - started:.0f}s: {len(leaks)} leak(s)"
    )
    for where, text in outputs:
        if where.startswith(("CLI", "API")):
            print(f"[faults]   {where}: {text.strip().splitlines()[-1][:150] if text.strip() else '(empty)'}")
    assert not leaks, "\n".join(leaks)
    assert pair.dst.get_branch_head(pair.mirror, "main") == pair.src.get_branch_head(pair.repo, "main")
