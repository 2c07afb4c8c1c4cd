"""The local multi-region environment: lakeFS, MinIO and mc built from their Go modules, PostgreSQL, DynamoDB
Local.

Shared by the tests, the demo and users (``lakefs-mirror dev devenv up|status|down``).
"""

from .build import (
    cache_dir,
    ensure_helm_binary,
    ensure_lakefs_binary,
    ensure_mc_binary,
    ensure_minio_binary,
    ensure_prometheus_binary,
    ensure_promtool_binary,
    ensure_toxiproxy_binaries,
)
from .environment import (
    DEFAULT_REGIONS,
    DEVENV_TABLE,
    RegionSpec,
    environment_down,
    environment_status,
    environment_up,
    parse_region_spec,
    stop_environment,
)
from .link import LinkSpec, Toxiproxy, parse_link_spec, start_toxiproxy
from .processes import DevenvError
from .restart import restart_server, start_server, stop_server
from .servers import LakeFSRegion, MinioInstance, start_lakefs, start_minio
from .state import Environment, default_state_dir, load_environment
from .versions import HELM_VERSION, LAKEFS_VERSION, MC_VERSION, MINIO_VERSION, PROMETHEUS_VERSION

__all__ = [
    "DEFAULT_REGIONS",
    "DEVENV_TABLE",
    "HELM_VERSION",
    "LAKEFS_VERSION",
    "MC_VERSION",
    "MINIO_VERSION",
    "PROMETHEUS_VERSION",
    "DevenvError",
    "Environment",
    "LakeFSRegion",
    "LinkSpec",
    "MinioInstance",
    "RegionSpec",
    "Toxiproxy",
    "cache_dir",
    "default_state_dir",
    "ensure_helm_binary",
    "ensure_lakefs_binary",
    "ensure_mc_binary",
    "ensure_minio_binary",
    "ensure_prometheus_binary",
    "ensure_promtool_binary",
    "ensure_toxiproxy_binaries",
    "environment_down",
    "environment_status",
    "environment_up",
    "load_environment",
    "parse_link_spec",
    "parse_region_spec",
    "restart_server",
    "start_lakefs",
    "start_minio",
    "start_server",
    "start_toxiproxy",
    "stop_environment",
    "stop_server",
]
