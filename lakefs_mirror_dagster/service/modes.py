"""Which authorization mode ``serve`` runs in, and how the region's lakeFS does authorization, said at start.

Two modes: ``policies`` (a policies file from ``serve --policies`` or ``auth.policies_file``: each call needs the
reference's RBAC actions) and ``open`` (no policies: every caller lakeFS authenticates may do everything, deleting
mirror repositories included), which is logged as a warning every time the server starts.

lakeFS itself tells how it authorizes (``GET /api/v1/setup_lakefs``, ``login_config.RBAC``): ``none`` for open
source lakeFS (a single admin, no policies: its ``/auth/policies`` answers 501), ``simplified`` for the ACL
server, ``external`` for an RBAC auth service (lakeFS Cloud/Enterprise). This service never asks lakeFS to
authorize a call (open-source lakeFS cannot answer, and nothing here proves a lakeFS that can): it only reports
the lakeFS model beside its own mode, so an operator sees when lakeFS's users are not limited by lakeFS either.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lakefs import LakeFSClient, LakeFSError
from .rbac import PolicySet

__all__ = ["AuthorizationMode", "authorization_mode", "lakefs_rbac_model"]


@dataclass(frozen=True)
class AuthorizationMode:
    """``name`` is ``policies`` or ``open``; ``warning`` is True when the mode deserves an operator's look."""

    name: str
    message: str
    warning: bool


def lakefs_rbac_model(client: LakeFSClient) -> str | None:
    """lakeFS's ``login_config.RBAC`` (``none``, ``simplified``, ``external``), or None when it cannot be read."""
    try:
        state = client.call("get setup state", client.internal.get_setup_state, retry=False)
    except (LakeFSError, ValueError):  # ValueError: an answer that is not lakeFS's (pydantic's ValidationError)
        return None
    login = getattr(state, "login_config", None)
    rbac = getattr(login, "rbac", None)
    return str(rbac) if rbac else None


_LAKEFS_MODELS = {
    "none": "no RBAC of its own (open source: a single admin user, no policies)",
    "simplified": "ACLs (the simplified auth server)",
    "external": "RBAC through an external auth service",
}


def authorization_mode(
    policies: PolicySet, *, policies_source: str | None, region: str, lakefs_model: str | None
) -> AuthorizationMode:
    """The start-up line: which users may do what in this process, and what the region's lakeFS enforces."""
    if lakefs_model is None:
        lakefs_text = f"the lakeFS of region {region} did not say how it authorizes (GET /api/v1/setup_lakefs)"
    else:
        described = _LAKEFS_MODELS.get(lakefs_model, f"authorization model {lakefs_model!r}")
        lakefs_text = f"the lakeFS of region {region} reports RBAC {lakefs_model!r}: {described}"
    if policies.enabled:
        return AuthorizationMode(
            "policies",
            f"authorization: policies from {policies_source} ({policies.describe()}); each call needs the "
            f"reference's RBAC actions (fs:MirrorRepository, fs:CreateRepository, fs:AttachStorageNamespace, "
            f"fs:DeleteRepository, fs:ListRepositories); {lakefs_text}",
            False,
        )
    return AuthorizationMode(
        "open",
        f"authorization: OPEN - no policies (serve --policies or auth.policies_file), so ANY authenticated lakeFS "
        f"user of region {region} may create mirrors and delete any mirror, which deletes its repository; "
        f"{lakefs_text}; start from deploy/policies/least-privilege.yaml (docs/security.md)",
        True,
    )
