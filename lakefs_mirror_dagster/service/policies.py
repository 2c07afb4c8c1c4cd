"""Reading the API's RBAC policies from a file (until the replication config carries them).

The file is YAML or JSON::

    policies:                      # lakeFS policy documents
      - id: MirrorAdmins
        statement:
          - {action: ["fs:*"], effect: allow, resource: "*"}
    users:                         # optional: access key id or user id (or "*") -> policy ids
      AKIAIOSFODNN7EXAMPLE: [MirrorAdmins]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..config import ConfigError
from .rbac import PolicySet

__all__ = ["load_policies"]


def load_policies(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, list[str]] | None]:
    """``(policies, user_policies)`` for ``create_app``/``serve``; ``ConfigError`` naming the file and problem
    (so ``serve --policies`` with a bad file is one line, never a traceback)."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read policies file {p}: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("policies"), list):
        raise ConfigError(f"policies file {p}: expected a mapping with a 'policies' list")
    unknown = set(raw) - {"policies", "users"}
    if unknown:
        raise ConfigError(f"policies file {p}: unknown keys {sorted(unknown)} (expected 'policies', 'users')")
    users = raw.get("users")
    if users is not None and (not isinstance(users, dict) or not all(isinstance(v, list) for v in users.values())):
        raise ConfigError(f"policies file {p}: 'users' must map a user or access key id to a list of policy ids")
    policies: list[dict[str, Any]] = raw["policies"]
    user_policies = {str(k): [str(x) for x in v] for k, v in users.items()} if users is not None else None
    try:
        PolicySet(policies, user_policies)  # validate now, with the file name in the message
    except ValueError as exc:
        raise ConfigError(f"policies file {p}: {exc}") from None
    return policies, user_policies
