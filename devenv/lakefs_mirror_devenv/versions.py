"""Pinned versions of the servers the dev environment builds.

lakeFS is pinned to the release whose behaviour ``shared/design/lakefs-internals.md`` describes; the
``lakefs-sdk`` pin in ``pyproject.toml`` follows it. MinIO publishes no semver tags to the Go module proxy,
so it is pinned by pseudo-version. ``mc`` (the MinIO client, for bucket replication rules in the tests) is
pinned to the pseudo-version MinIO's own ``go.mod`` requires at that commit: the client of the same period.
"""

LAKEFS_VERSION = "1.84.0"
LAKEFS_MODULE = "github.com/treeverse/lakefs"
MINIO_MODULE = "github.com/minio/minio"
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
MC_MODULE = "github.com/minio/mc"
MC_VERSION = "v0.0.0-20250313080218-cf909e1063a9"
# Helm renders and lints the chart in deploy/helm (tests/deploy); v3, whose chart format the chart uses.
HELM_MODULE = "helm.sh/helm/v3"
HELM_VERSION = "v3.22.0"
# Toxiproxy puts a region's traffic behind a simulated link (latency, jitter, bandwidth, resets):
# `devenv up --link` and tests/wan. Its server and CLI, from the module's cmd/server and cmd/cli.
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION = "v2.12.0"
# Prometheus and promtool (tests/deploy checks the alert rules; tests/metrics scrapes the service): the Go module's
# v0.3XX.Y tags are Prometheus 3.XX.Y (its VERSION file at v0.316.0 says 3.16.0).
PROMETHEUS_MODULE = "github.com/prometheus/prometheus"
PROMETHEUS_VERSION = "v0.316.0"
# lakeFS's go.mod requires at least this Go; older toolchains would try to download a newer one.
MIN_GO_VERSION = (1, 26, 4)

__all__ = [
    "HELM_MODULE",
    "HELM_VERSION",
    "LAKEFS_MODULE",
    "LAKEFS_VERSION",
    "MC_MODULE",
    "MC_VERSION",
    "MINIO_MODULE",
    "MINIO_VERSION",
    "MIN_GO_VERSION",
    "PROMETHEUS_MODULE",
    "PROMETHEUS_VERSION",
    "TOXIPROXY_MODULE",
    "TOXIPROXY_VERSION",
]
