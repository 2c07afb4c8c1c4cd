"""lakeFS-style RBAC for the mirror API: policies, wildcard matching, and the permissions each call needs.

Pure functions and frozen values only, so the rules are unit-testable without a server. Semantics follow
lakeFS: a statement applies when one of its actions and its resource match (``*`` any run of characters,
``?`` one character); an explicit ``deny`` beats any ``allow``; nothing matching means not allowed.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "Decision",
    "Permission",
    "Policy",
    "PolicySet",
    "Statement",
    "create_mirror_permissions",
    "delete_mirror_permissions",
    "edit_mirrored_branches_permissions",
    "evaluate",
    "list_mirrors_permissions",
    "missing_permission",
    "namespace_arn",
    "parse_policy",
    "repository_arn",
    "wildcard_match",
]

ACTION = re.compile(r"^(\*|[a-z]+:[A-Za-z*?]+)$")


def repository_arn(repository: str) -> str:
    """The lakeFS ARN of a repository, as policies name it."""
    return f"arn:lakefs:fs:::repository/{repository}"


def namespace_arn(storage_namespace: str) -> str:
    """The lakeFS ARN of a storage namespace (``fs:AttachStorageNamespace``)."""
    return f"arn:lakefs:fs:::namespace/{storage_namespace}"


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    parts = ("." if c == "?" else ".*" if c == "*" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


def wildcard_match(pattern: str, value: str) -> bool:
    """True when ``value`` matches ``pattern`` as a whole (``*``: any run, ``?``: one character)."""
    return _compile(pattern).fullmatch(value) is not None


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NONE = "none"


@dataclass(frozen=True)
class Permission:
    """One action on one resource ARN that a request needs."""

    action: str
    resource: str


@dataclass(frozen=True)
class Statement:
    actions: tuple[str, ...]
    effect: Decision
    resources: tuple[str, ...]

    def applies(self, action: str, resource: str) -> bool:
        return any(wildcard_match(a, action) for a in self.actions) and any(
            wildcard_match(r, resource) for r in self.resources
        )


@dataclass(frozen=True)
class Policy:
    id: str
    statements: tuple[Statement, ...]


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: expected a non-empty string or list of non-empty strings, got {value!r}")
    return tuple(value)


def parse_policy(raw: Mapping[str, Any], *, index: int = 0) -> Policy:
    """Validate one policy in lakeFS JSON form; the error names the policy and the bad field."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"policy #{index}: expected an object, got {type(raw).__name__}")
    policy_id = raw.get("id", f"policy-{index}")
    if not isinstance(policy_id, str) or not policy_id:
        raise ValueError(f"policy #{index}: id must be a non-empty string, got {policy_id!r}")
    raw_statements = raw.get("statement")
    if not isinstance(raw_statements, list) or not raw_statements:
        raise ValueError(f"policy {policy_id}: 'statement' must be a non-empty list")
    statements = []
    for i, st in enumerate(raw_statements):
        where = f"policy {policy_id} statement #{i}"
        if not isinstance(st, Mapping):
            raise ValueError(f"{where}: expected an object")
        effect = st.get("effect")
        if effect not in ("allow", "deny"):
            raise ValueError(f"{where}: effect must be 'allow' or 'deny', got {effect!r}")
        actions = _strings(st.get("action"), f"{where} action")
        for action in actions:
            if not ACTION.match(action):
                raise ValueError(f"{where}: action {action!r} is not of the form 'fs:ActionName' or '*'")
        resources = _strings(st.get("resource"), f"{where} resource")
        statements.append(Statement(actions, Decision(effect), resources))
    return Policy(policy_id, tuple(statements))


def evaluate(policies: Iterable[Policy], action: str, resource: str) -> Decision:
    """ALLOW if some statement allows and none denies; DENY if any denies; NONE if nothing applies."""
    allowed = False
    for policy in policies:
        for st in policy.statements:
            if st.applies(action, resource):
                if st.effect is Decision.DENY:
                    return Decision.DENY
                allowed = True
    return Decision.ALLOW if allowed else Decision.NONE


def missing_permission(policies: Sequence[Policy], required: Iterable[Permission]) -> Permission | None:
    """The first required permission the policies do not grant, or None when all are granted."""
    for permission in required:
        if evaluate(policies, permission.action, permission.resource) is not Decision.ALLOW:
            return permission
    return None


def create_mirror_permissions(source_repository: str, mirror_name: str, storage_namespace: str) -> list[Permission]:
    """The reference's table for creating a mirror."""
    return [
        Permission("fs:MirrorRepository", repository_arn(source_repository)),
        Permission("fs:CreateRepository", repository_arn(mirror_name)),
        Permission("fs:AttachStorageNamespace", namespace_arn(storage_namespace)),
    ]


def edit_mirrored_branches_permissions(source_repository: str) -> list[Permission]:
    """The reference's table for editing mirrored branches: ``fs:MirrorRepository`` on the source repository."""
    return [Permission("fs:MirrorRepository", repository_arn(source_repository))]


def delete_mirror_permissions(mirror_name: str) -> list[Permission]:
    """Deleting a mirror deletes its read-only repository, so it needs ``fs:DeleteRepository`` on it."""
    return [Permission("fs:DeleteRepository", repository_arn(mirror_name))]


def list_mirrors_permissions() -> list[Permission]:
    """Listing or getting mirrors: ``fs:ListRepositories`` on ``*``."""
    return [Permission("fs:ListRepositories", "*")]


class PolicySet:
    """The configured policies and which users they apply to.

    ``policies is None`` (or empty) turns RBAC off: every authenticated user may do everything. With
    policies but no ``user_policies`` mapping, all policies apply to every user. With a mapping, a user
    gets the policies listed under its access key id, its user id, and ``"*"``; an unknown policy id in the
    mapping is a configuration error.
    """

    def __init__(
        self,
        policies: Sequence[Mapping[str, Any]] | None = None,
        user_policies: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        parsed = [parse_policy(p, index=i) for i, p in enumerate(policies or [])]
        self._by_id: dict[str, Policy] = {}
        for p in parsed:
            if p.id in self._by_id:
                raise ValueError(f"policy id {p.id!r} is defined twice")
            self._by_id[p.id] = p
        self._users: dict[str, tuple[Policy, ...]] | None = None
        if user_policies is not None:
            self._users = {}
            for user, ids in user_policies.items():
                names = _strings(list(ids) if not isinstance(ids, str) else ids, f"user {user!r} policies")
                unknown = [n for n in names if n not in self._by_id]
                if unknown:
                    raise ValueError(
                        f"user {user!r} refers to unknown policies {unknown}; defined: {sorted(self._by_id)}"
                    )
                self._users[user] = tuple(self._by_id[n] for n in names)

    @property
    def enabled(self) -> bool:
        return bool(self._by_id)

    def describe(self) -> str:
        """For the start-up log: the policy ids and who gets them."""
        ids = ", ".join(sorted(self._by_id)) or "none"
        if self._users is None:
            return f"policies {ids}, all applied to every user"
        return f"policies {ids}, applied to {len(self._users)} listed user(s) or key(s)"

    def policies_for(self, *, user_id: str, access_key_id: str) -> list[Policy]:
        if self._users is None:
            return list(self._by_id.values())
        found: dict[str, Policy] = {}
        for key in (access_key_id, user_id, "*"):
            for p in self._users.get(key, ()):
                found[p.id] = p
        return list(found.values())

    def missing(self, required: Iterable[Permission], *, user_id: str, access_key_id: str) -> Permission | None:
        """The first permission this user lacks (None: allowed, always None when RBAC is off)."""
        if not self.enabled:
            return None
        return missing_permission(self.policies_for(user_id=user_id, access_key_id=access_key_id), required)
