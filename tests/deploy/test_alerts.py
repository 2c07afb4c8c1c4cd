"""deploy/prometheus/alerts.yaml as Prometheus loads it: ``promtool check rules`` accepts it and ``promtool test
rules`` runs its cases (tests/deploy/prometheus/alerts_test.yaml); every metric it names is one the service
exposes. promtool is built from the Prometheus Go module and cached like Helm."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from lakefs_mirror_devenv import ensure_promtool_binary

from lakefs_mirror_dagster.metrics import ERROR_KINDS, SyncMetrics, request_metrics
from lakefs_mirror_dagster.metrics.status import StatusCollector

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yaml"
CASES = Path(__file__).resolve().parent / "prometheus" / "alerts_test.yaml"


@pytest.fixture(scope="session")
def promtool() -> Path:
    """The pinned ``promtool`` (a missing Go toolchain or a failed build is an error, never a skip)."""
    return ensure_promtool_binary()


def _run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120, check=False)


def test_promtool_accepts_the_rules(promtool: Path) -> None:
    done = _run(promtool, "check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout + done.stderr


def test_the_rules_pass_their_promtool_cases(promtool: Path) -> None:
    done = _run(promtool, "test", "rules", str(CASES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr


def test_every_alert_has_a_case() -> None:
    alerts = {r["alert"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]}
    cases = {t["alertname"] for case in yaml.safe_load(CASES.read_text())["tests"] for t in case["alert_rule_test"]}
    assert alerts == cases


def test_the_rules_name_only_metrics_the_service_exposes() -> None:
    exposed = {f.name for f in StatusCollector.describe_families()}
    sync = SyncMetrics()
    for collector in (sync.objects, sync.bytes, sync.commits, sync.refs, sync.errors, sync.passes, sync.last_pass):
        exposed |= {m.name for m in collector.describe()}
    requests = request_metrics()
    for collector in (requests.lakefs, requests.store, requests.failures):
        exposed |= {m.name for m in collector.describe()}
    named = set(re.findall(r"\blakefs_mirror_[a-z_]+", RULES.read_text()))
    assert named and named <= exposed, named - exposed
    assert ERROR_KINDS  # the documented error kinds exist
