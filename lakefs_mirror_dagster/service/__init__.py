"""The mirror management REST API (reference: ``/service/replication/v1``) with lakeFS auth and RBAC."""

from .app import (
    API_PREFIX,
    UNAUTHENTICATED_PATHS,
    ApiError,
    create_app,
    mirror_json,
    openapi_document,
    write_openapi,
)
from .auth import Authenticator, Identity, lakefs_verifier
from .modes import AuthorizationMode, authorization_mode, lakefs_rbac_model
from .policies import load_policies
from .rbac import Permission, PolicySet
from .server import parse_listen_address, running_server, serve, startup_mode
from .tls import TLSFiles, tls_files

__all__ = [
    "API_PREFIX",
    "UNAUTHENTICATED_PATHS",
    "ApiError",
    "Authenticator",
    "AuthorizationMode",
    "Identity",
    "Permission",
    "PolicySet",
    "TLSFiles",
    "authorization_mode",
    "create_app",
    "lakefs_rbac_model",
    "lakefs_verifier",
    "load_policies",
    "mirror_json",
    "openapi_document",
    "parse_listen_address",
    "running_server",
    "serve",
    "startup_mode",
    "tls_files",
    "write_openapi",
]
