"""deploy/helm/lakefs-mirror as an operator installs it: the reference's `replication:` values, linted and rendered
by the real Helm, with the config in a ConfigMap free of secrets and the secrets from extraEnvVarsSecret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.config.env import REFERENCE_SECRET_NAMES
from lakefs_mirror_dagster.service.app import openapi_document

from .chart import CHART, CHART_SECRET_KEYS, helm, render

TWO_REGION = (CHART / "values-two-region-example.yaml", CHART / "values-two-region-example-us-west-2.yaml")


def _walk_keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _walk_keys(v)}
    return set()


@pytest.mark.parametrize("values", [(), *[(p,) for p in TWO_REGION]], ids=["default", "us-east-1", "us-west-2"])
def test_lint_passes(helm_bin: Path, values: tuple[Path, ...]) -> None:
    args = [a for p in values for a in ("--values", str(p))]
    done = helm(helm_bin, "lint", "--strict", str(CHART), *args)
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_default_values_render_a_deployment_of_serve_and_sync(helm_bin: Path) -> None:
    rendered, _ = render(helm_bin, release="mirror")
    assert rendered.kinds_and_names() == [
        ("ConfigMap", "mirror-lakefs-mirror"),
        ("Deployment", "mirror-lakefs-mirror"),
        ("Service", "mirror-lakefs-mirror"),
        ("ServiceAccount", "mirror-lakefs-mirror"),
    ]
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "mirror-lakefs-mirror"
    assert pod["securityContext"]["runAsNonRoot"] is True
    containers = rendered.containers()
    assert containers["serve"]["args"][:1] == ["serve"] and containers["sync"]["args"] == ["sync"]
    assert containers["serve"]["image"] == "localhost/lakefs-mirror:0.1.0"  # appVersion = the package's version
    assert containers["serve"]["ports"] == [{"name": "http", "containerPort": 8008, "protocol": "TCP"}]
    assert rendered.one("Service")["spec"]["ports"][0]["targetPort"] == "http"
    for container in containers.values():
        assert container["resources"]["requests"], "every container states what it needs"
        assert {"name": "REPLICATION_CONFIG", "value": "/etc/lakefs-mirror/config.yaml"} in container["env"]
        assert {"name": "config", "mountPath": "/etc/lakefs-mirror", "readOnly": True} in container["volumeMounts"]
        assert "envFrom" not in container  # no extraEnvVarsSecret given
    assert rendered.config() == {}  # no default config: Helm would merge it into yours


def test_probes_point_at_the_services_routes(helm_bin: Path) -> None:
    rendered, _ = render(helm_bin)
    serve = rendered.containers()["serve"]
    paths = openapi_document()["paths"]
    for probe in (serve["livenessProbe"], serve["readinessProbe"]):
        path = probe["httpGet"]["path"]
        assert "get" in paths.get(path, {}), f"{path} is not a GET route of `lakefs-mirror serve`"
        assert probe["httpGet"]["port"] == "http"
    # Kubernetes sends traffic only while the mirrors database and the region's lakeFS answer.
    assert serve["readinessProbe"]["httpGet"]["path"] == "/_ready"


def test_two_region_example_as_the_reference_writes_it(helm_bin: Path, tmp_path: Path) -> None:
    for values_file, region, other in zip(
        TWO_REGION, ("us-east-1", "us-west-2"), ("us-west-2", "us-east-1"), strict=True
    ):
        rendered, _ = render(helm_bin, [values_file])
        written = yaml.safe_load(values_file.read_text())["replication"]
        assert rendered.kinds_and_names() == [
            ("ConfigMap", "lakefs-mirror"),
            ("Deployment", "lakefs-mirror"),
            ("Service", "lakefs-mirror"),
        ]  # (the service account is the reference's existing one)
        pod = rendered.one("Deployment")["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == written["serviceAccountName"]
        for container in pod["containers"]:
            assert container["image"] == "registry.example.com/lakefs-mirror:0.1.0"
            assert container["envFrom"] == [{"secretRef": {"name": "replication-secrets"}}]

        # The ConfigMap holds the reference's config minus its secret: no secret key and no secret value.
        text = rendered.config_text()
        config = rendered.config()
        assert "<shared-secret>" not in text and not (_walk_keys(config) & CHART_SECRET_KEYS)
        expected = dict(written["config"])
        del expected["auth"]  # auth.encrypt holds only the secret key
        assert config == expected
        assert config["region"] == region and list(config["dst_endpoints"]) == [other]

        # What the pod gets — the ConfigMap's file and the secret's keys as variables of the same names — is a
        # complete config: the reference's secret names fill the fields the ConfigMap lacks.
        secret = {name: f"value-of-{name}" for name in REFERENCE_SECRET_NAMES}
        path = tmp_path / f"{region}.yaml"
        path.write_text(text)
        loaded = load_config(path, env=secret)
        assert loaded.auth.encrypt.secret_key.reveal() == "value-of-auth_encrypt_secret_key"
        assert loaded.lakefs.access_key_id == "value-of-source_lakefs_access_key_id"
        assert loaded.lakefs.secret_access_key.reveal() == "value-of-source_lakefs_secret_access_key"
        assert (loaded.region, loaded.mirrors_database.type) == (region, "dynamodb")


def test_a_real_secret_in_the_config_fails_the_render(helm_bin: Path) -> None:
    values = {"replication": {"config": {"auth": {"encrypt": {"secret_key": "s3cr3t-value"}}}}}
    rendered, done = render(helm_bin, [TWO_REGION[0]], values, check=False)
    assert done.returncode != 0 and not rendered.docs
    assert "replication.config.auth.encrypt.secret_key holds a secret" in done.stderr
    assert "auth_encrypt_secret_key" in done.stderr and "s3cr3t-value" not in done.stderr


def test_disabled_renders_nothing(helm_bin: Path) -> None:
    rendered, _ = render(helm_bin, [TWO_REGION[0]], {"replication": {"enabled": False}})
    assert rendered.docs == []


def test_an_existing_service_account_is_used_not_created(helm_bin: Path) -> None:
    rendered, _ = render(helm_bin, values={"replication": {"serviceAccountName": "irsa-replication"}})
    assert "ServiceAccount" not in {d["kind"] for d in rendered.docs}
    assert rendered.one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "irsa-replication"


def test_refstore_database_comes_from_the_lakefs_chart_secret(helm_bin: Path, tmp_path: Path) -> None:
    """``refstoreDatabase.secretName`` gives both containers ``refstore_database`` (docs/log-order.md) from the
    lakeFS chart's secret; the config those variables build writes commit records into that database."""
    assert not any(
        e["name"].startswith("REPLICATION_REFSTORE")
        for c in render(helm_bin)[0].containers().values()
        for e in c["env"]
    )
    rendered, _ = render(helm_bin, [TWO_REGION[0]], {"replication": {"refstoreDatabase": {"secretName": "lakefs"}}})
    for container in rendered.containers().values():
        env = {e["name"]: e for e in container["env"]}
        assert env["REPLICATION_REFSTORE_DATABASE_TYPE"]["value"] == "postgres"
        ref = env["REPLICATION_REFSTORE_DATABASE_POSTGRES_CONNECTION_STRING"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "lakefs", "key": "database_connection_string"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(rendered.config()))
    secrets = {
        "REPLICATION_REFSTORE_DATABASE_TYPE": "postgres",
        "REPLICATION_REFSTORE_DATABASE_POSTGRES_CONNECTION_STRING": "postgres://lakefs:pw@db:5432/lakefs",
        **{name: "x" for name in REFERENCE_SECRET_NAMES},
    }
    config = load_config(path, env=secrets)
    assert config.refstore_database is not None and config.refstore_database.type == "postgres"


def test_policies_and_tls_secret_reach_serve_only(helm_bin: Path, tmp_path: Path) -> None:
    from lakefs_mirror_dagster.service import load_policies

    shipped = yaml.safe_load((CHART.parents[1] / "policies" / "least-privilege.yaml").read_text())
    values = {"replication": {"serve": {"policies": shipped, "tlsSecret": "mirror-east-tls"}}}
    rendered, _ = render(helm_bin, [TWO_REGION[0]], values)
    containers = rendered.containers()
    serve, sync = containers["serve"], containers["sync"]
    assert serve["args"][3:] == [
        "--policies", "/etc/lakefs-mirror/policies.yaml",
        "--tls-cert", "/etc/lakefs-mirror-tls/tls.crt", "--tls-key", "/etc/lakefs-mirror-tls/tls.key",
    ]  # fmt: skip
    # the policies file in the ConfigMap is the shipped one, as serve loads it
    (tmp_path / "policies.yaml").write_text(rendered.one("ConfigMap")["data"]["policies.yaml"])
    assert load_policies(tmp_path / "policies.yaml") == load_policies(
        CHART.parents[1] / "policies" / "least-privilege.yaml"
    )
    # the key is mounted into serve only, and the probes speak HTTPS
    tls_mount = {"name": "tls", "mountPath": "/etc/lakefs-mirror-tls", "readOnly": True}
    assert tls_mount in serve["volumeMounts"] and tls_mount not in sync["volumeMounts"]
    volumes = {v["name"]: v for v in rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "mirror-east-tls"
    for probe in ("livenessProbe", "readinessProbe"):
        assert serve[probe]["httpGet"]["scheme"] == "HTTPS"

    plain, _ = render(helm_bin, [TWO_REGION[0]])
    serve = plain.containers()["serve"]
    assert (
        serve["args"] == ["serve", "--listen", "0.0.0.0:8008"] and "policies.yaml" not in plain.one("ConfigMap")["data"]
    )
    assert "scheme" not in serve["livenessProbe"]["httpGet"] and "tls" not in {m["name"] for m in serve["volumeMounts"]}
    checksum = rendered.one("Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert checksum != plain.one("Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]


def test_metrics_enabled_serves_the_sync_loops_metrics_on_a_port_of_its_own(helm_bin: Path) -> None:
    rendered, _ = render(helm_bin, values={"replication": {"metrics": {"enabled": True, "port": 9200}}})
    sync = rendered.containers()["sync"]
    assert sync["args"] == ["sync", "--metrics-listen", "0.0.0.0:9200"]
    assert sync["ports"] == [{"name": "metrics", "containerPort": 9200, "protocol": "TCP"}]
    annotations = rendered.one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert (annotations["prometheus.io/scrape"], annotations["prometheus.io/port"]) == ("true", "9200")
    assert annotations["prometheus.io/path"] == "/metrics"
    ports = {p["name"]: p for p in rendered.one("Service")["spec"]["ports"]}
    assert ports["metrics"]["targetPort"] == "metrics" and ports["metrics"]["port"] == 9200
    quiet, _ = render(helm_bin, values={"replication": {"metrics": {"enabled": True, "scrapeAnnotations": False}}})
    quiet_annotations = quiet.one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert not any(k.startswith("prometheus.io/") for k in quiet_annotations)
    off, _ = render(helm_bin)
    assert "ports" not in off.containers()["sync"] and len(off.one("Service")["spec"]["ports"]) == 1
