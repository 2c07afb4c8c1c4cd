"""The metrics through a real Prometheus (built from its Go module): it scrapes ``lakefs-mirror serve`` and a
``lakefs-mirror sync`` loop of the mirror's region (processes of their own) every second, with the project's alert
rules loaded. A commit at the source, held mid-copy by a failpoint, shows in Prometheus's HTTP API as a branch
behind its source on both targets; released, the lag comes back to 0 and the copy counters move.

Real lakeFS regions: the source (region-a) on MinIO, the mirror (region-b) on the local blockstore.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv import Environment, ensure_prometheus_binary
from lakefs_mirror_devenv.processes import free_port, start_process, stop_pid, wait_http_ok

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yaml"
OBJECTS = 4


@contextmanager
def _process(argv: list[str], log: Path, ready_url: str, env: dict[str, str] | None = None) -> Iterator[None]:
    """A server process of the test, up once ``ready_url`` answers 2xx, stopped (bounded) at the end."""
    process = start_process(argv, log_path=log, env=env)
    try:
        wait_http_ok(ready_url, timeout_s=90, process=process, log_path=log)
        yield
    finally:
        stop_pid(process.pid)


def _cli(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lakefs_mirror_dagster.cli", "--config", str(config), *args]


class Prometheus:
    """Reads through the server's HTTP API (``/api/v1/query``)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, **params: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}?{urllib.parse.urlencode(params)}", timeout=10) as resp:
            doc = json.load(resp)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, promql: str) -> dict[str, float]:
        """An instant vector as {job: value} (each series here is one per job)."""
        return {
            r["metric"].get("job", ""): float(r["value"][1]) for r in self.get("/api/v1/query", query=promql)["result"]
        }

    def wait(self, promql: str, done: Callable[[dict[str, float]], bool], timeout_s: float = 90.0) -> dict[str, float]:
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.query(promql)
            if done(found):
                return found
            assert time.monotonic() < deadline, f"{promql}: still {found} after {timeout_s}s"
            time.sleep(0.5)


def test_prometheus_sees_the_lag_rise_and_come_back_and_the_copies_counted(
    lakefs_env: Environment,
    isolated_regions: Any,
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    config_path, service = isolated_regions
    region_a = lakefs_env.region("region-a")
    src_svc = service("region-a")
    src = src_svc.client("region-a")
    repo, name = unique_name("promsrc"), unique_name("prommirror")
    src.create_repository(repo, region_a.namespace_for(repo))
    for i in range(OBJECTS):
        src.upload_object(repo, "main", f"data/{i}.bin", os.urandom(500 + i))
    src.commit(repo, "main", "first")
    src_svc.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(unique_name("ns")),
    )
    [first] = service("region-b").sync(name=name)  # in sync before the loop starts
    assert first.ok, first.to_json()

    serve_port, sync_port, prom_port = free_port(), free_port(), free_port()
    west = config_path("region-b")
    raw = yaml.safe_load(west.read_text())
    raw["metrics"] = {"listen_address": f"127.0.0.1:{sync_port}"}  # the config key, not the flag
    raw["commit_sensor"] = {**raw.get("commit_sensor", {}), "process_branches_duration": "1s"}
    west.write_text(yaml.safe_dump(raw))
    release = tmp_path / "release"
    env = {
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        # the loop's first copied object holds its sync until the test releases it: the commit is seen, not promoted
        "LAKEFS_MIRROR_FAILPOINT": f"after_object_copy:1:hold={release}",
    }
    prom_config = tmp_path / "prometheus.yml"
    prom_config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [
                    {"job_name": "serve", "static_configs": [{"targets": [f"127.0.0.1:{serve_port}"]}]},
                    {"job_name": "sync", "static_configs": [{"targets": [f"127.0.0.1:{sync_port}"]}]},
                ],
            }
        )
    )
    prometheus = [
        str(ensure_prometheus_binary()),
        f"--config.file={prom_config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{prom_port}",
    ]
    serve = _cli(west, "serve", "--listen", f"127.0.0.1:{serve_port}")
    try:
        with (
            _process(serve, tmp_path / "serve.log", f"http://127.0.0.1:{serve_port}/_health", env),
            _process(
                _cli(west, "sync", "--mirror", name),
                tmp_path / "sync.log",
                f"http://127.0.0.1:{sync_port}/metrics",
                env,
            ),
            _process(prometheus, tmp_path / "prometheus.log", f"http://127.0.0.1:{prom_port}/-/ready"),
        ):
            prom = Prometheus(f"http://127.0.0.1:{prom_port}")
            behind = f'lakefs_mirror_branch_behind_seconds{{mirror="{name}",branch="main"}}'
            both = {"serve", "sync"}
            prom.wait(behind, lambda found: set(found) == both and not any(found.values()))
            rules = [r for g in prom.get("/api/v1/rules")["groups"] for r in g["rules"]]
            assert len(rules) == 5 and all(r["health"] == "ok" for r in rules), rules

            src.upload_object(repo, "main", "data/new.bin", os.urandom(2000))
            head = src.commit(repo, "main", "second").id
            # held mid-copy: both targets show the branch behind its new head, by more and more
            prom.wait(f"{behind} > 1", lambda found: set(found) == both)
            state = f'lakefs_mirror_branch_state{{mirror="{name}",branch="main",state="behind"}}'
            assert set(prom.query(f"{state} == 1")) == both

            release.touch()
            prom.wait(behind, lambda found: set(found) == both and not any(found.values()))
            assert service("region-b").client("region-b").get_branch_head(name, "main") == head
            peak = prom.query(f"max_over_time({behind}[10m])")
            assert set(peak) == both and min(peak.values()) > 1  # it rose, then came back to 0
            copied = prom.wait(
                f'lakefs_mirror_objects_copied_total{{mirror="{name}"}}', lambda found: found.get("sync", 0) >= 1
            )
            assert set(copied) == {"sync"}  # serve copies nothing and counts nothing
            assert prom.query(f'lakefs_mirror_commits_copied_total{{mirror="{name}"}}')["sync"] >= 1
            assert prom.query(f'lakefs_mirror_bytes_copied_total{{mirror="{name}"}}')["sync"] >= 2000
            assert prom.query('lakefs_mirror_sync_pass_duration_seconds_count{kind="full"}')["sync"] >= 2
            # request latencies, labelled by operation class only (no key, no id)
            lakefs_ops = prom.get("/api/v1/label/operation/values")
            assert {"get_branch", "get_commit"} & set(lakefs_ops) and {"put", "head"} & set(lakefs_ops)
            assert all(op.isidentifier() for op in lakefs_ops), lakefs_ops
            assert prom.query("sum(lakefs_mirror_store_request_duration_seconds_count)")[""] > 0
            assert prom.query("sum(lakefs_mirror_lakefs_request_duration_seconds_count)")[""] > 0
            assert not prom.query('ALERTS{alertstate="firing"}')
            with urllib.request.urlopen(f"http://127.0.0.1:{sync_port}/metrics", timeout=10) as resp:
                (tmp_path / "sync-scrape.txt").write_bytes(resp.read())  # left for a look (docs/metrics.md's sample)
    finally:
        release.touch()
    for log in ("serve.log", "sync.log"):
        assert "Traceback" not in (tmp_path / log).read_text(), (tmp_path / log).read_text()
