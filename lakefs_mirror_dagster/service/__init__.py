"""The mirror management REST API (reference: ``/service/replication/v1``) with lakeFS auth and RBAC."""

from .app import API_PREFIX, ApiError, create_app, mirror_json, openapi_document, write_openapi
from .auth import Authenticator, Identity, lakefs_verifier
from .policies import load_policies
from .rbac import Permission, PolicySet
from .server import parse_listen_address, running_server, serve

__all__ = [
    "API_PREFIX",
    "ApiError",
    "Authenticator",
    "Identity",
    "Permission",
    "PolicySet",
    "create_app",
    "lakefs_verifier",
    "load_policies",
    "mirror_json",
    "openapi_document",
    "parse_listen_address",
    "running_server",
    "serve",
    "write_openapi",
]
