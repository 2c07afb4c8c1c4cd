"""RBAC rules of the mirror API: lakeFS policy semantics and the reference's per-call permissions."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.service.rbac import (
    Decision,
    Permission,
    PolicySet,
    create_mirror_permissions,
    delete_mirror_permissions,
    evaluate,
    list_mirrors_permissions,
    parse_policy,
    wildcard_match,
)

# The reference's narrow replication policy, with its placeholders filled in.
NARROW = {
    "id": "ReplicationPolicy",
    "statement": [
        {"action": ["fs:ListRepositories"], "effect": "allow", "resource": "*"},
        {"action": ["fs:MirrorRepository"], "effect": "allow", "resource": "arn:lakefs:fs:::repository/sales"},
        {
            "action": ["fs:CreateRepository", "fs:DeleteRepository", "fs:AttachStorageNamespace"],
            "effect": "allow",
            "resource": "arn:lakefs:fs:::repository/sales-mirror",
        },
        {
            "action": ["fs:AttachStorageNamespace"],
            "effect": "allow",
            "resource": "arn:lakefs:fs:::namespace/s3://west/sales-mirror",
        },
    ],
}


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("*", "arn:lakefs:fs:::repository/x", True),
        ("arn:lakefs:fs:::repository/sales*", "arn:lakefs:fs:::repository/sales-eu", True),
        ("arn:lakefs:fs:::repository/sales*", "arn:lakefs:fs:::repository/marketing", False),
        ("arn:lakefs:fs:::repository/sale?", "arn:lakefs:fs:::repository/sales", True),
        ("arn:lakefs:fs:::repository/sale?", "arn:lakefs:fs:::repository/sale", False),
        ("fs:*", "fs:MirrorRepository", True),
        ("fs:Read*", "fs:MirrorRepository", False),
        # regex metacharacters in a pattern are literal
        ("arn:lakefs:fs:::namespace/s3://b/a.b", "arn:lakefs:fs:::namespace/s3://b/aXb", False),
        # a pattern matches the whole value, not a prefix
        ("arn:lakefs:fs:::repository/sales", "arn:lakefs:fs:::repository/sales-eu", False),
    ],
)
def test_wildcards(pattern: str, value: str, expected: bool) -> None:
    assert wildcard_match(pattern, value) is expected


def test_narrow_reference_policy_allows_exactly_its_mirror() -> None:
    policy = parse_policy(NARROW)
    ok = PolicySet([NARROW])
    assert (
        ok.missing(
            create_mirror_permissions("sales", "sales-mirror", "s3://west/sales-mirror"), user_id="u", access_key_id="k"
        )
        is None
    )
    # another mirror name: CreateRepository on it is missing
    missing = ok.missing(
        create_mirror_permissions("sales", "other", "s3://west/sales-mirror"), user_id="u", access_key_id="k"
    )
    assert missing == Permission("fs:CreateRepository", "arn:lakefs:fs:::repository/other")
    # another source repository: MirrorRepository is missing
    missing = ok.missing(
        create_mirror_permissions("hr", "sales-mirror", "s3://west/sales-mirror"), user_id="u", access_key_id="k"
    )
    assert missing is not None and missing.action == "fs:MirrorRepository"
    # another namespace
    missing = ok.missing(
        create_mirror_permissions("sales", "sales-mirror", "s3://west/x"), user_id="u", access_key_id="k"
    )
    assert missing == Permission("fs:AttachStorageNamespace", "arn:lakefs:fs:::namespace/s3://west/x")
    assert evaluate([policy], "fs:DeleteRepository", "arn:lakefs:fs:::repository/sales-mirror") is Decision.ALLOW
    assert evaluate([policy], "fs:DeleteRepository", "arn:lakefs:fs:::repository/sales") is Decision.NONE
    assert ok.missing(list_mirrors_permissions(), user_id="u", access_key_id="k") is None


def test_deny_wins_over_allow() -> None:
    allow_all = {"id": "All", "statement": [{"action": ["*"], "effect": "allow", "resource": "*"}]}
    deny = {
        "id": "NoDelete",
        "statement": [
            {"action": ["fs:DeleteRepository"], "effect": "deny", "resource": "arn:lakefs:fs:::repository/prod-*"}
        ],
    }
    rules = PolicySet([allow_all, deny])
    assert rules.missing(delete_mirror_permissions("prod-eu"), user_id="u", access_key_id="k") == Permission(
        "fs:DeleteRepository", "arn:lakefs:fs:::repository/prod-eu"
    )
    assert rules.missing(delete_mirror_permissions("dev-eu"), user_id="u", access_key_id="k") is None


def test_no_policies_allows_everyone_and_users_map_selects_policies() -> None:
    assert PolicySet(None).missing(delete_mirror_permissions("x-1"), user_id="u", access_key_id="k") is None
    admin = {"id": "Admin", "statement": [{"action": "fs:*", "effect": "allow", "resource": "*"}]}
    reader = {"id": "Reader", "statement": [{"action": "fs:ListRepositories", "effect": "allow", "resource": "*"}]}
    rules = PolicySet([admin, reader], {"AKADMIN": ["Admin"], "bob": ["Reader"]})
    delete = delete_mirror_permissions("m-1")
    assert rules.missing(delete, user_id="alice", access_key_id="AKADMIN") is None  # by access key id
    assert rules.missing(delete, user_id="bob", access_key_id="AKBOB") is not None  # by user id: reader only
    assert rules.missing(list_mirrors_permissions(), user_id="bob", access_key_id="AKBOB") is None
    # a user with no policies is allowed nothing once RBAC is on
    assert rules.missing(list_mirrors_permissions(), user_id="carol", access_key_id="AKC") is not None
    everyone = PolicySet([reader], {"*": ["Reader"]})
    assert everyone.missing(list_mirrors_permissions(), user_id="carol", access_key_id="AKC") is None


@pytest.mark.parametrize(
    ("policy", "users", "message"),
    [
        ({"id": "P", "statement": []}, None, "non-empty list"),
        ({"id": "P", "statement": [{"action": ["fs:X"], "effect": "permit", "resource": "*"}]}, None, "effect"),
        (
            {"id": "P", "statement": [{"action": ["ListRepositories"], "effect": "allow", "resource": "*"}]},
            None,
            "fs:ActionName",
        ),
        ({"id": "P", "statement": [{"action": ["fs:X"], "effect": "allow"}]}, None, "resource"),
        (
            {"id": "P", "statement": [{"action": ["fs:X"], "effect": "allow", "resource": "*"}]},
            {"u": ["Nope"]},
            "unknown policies",
        ),
    ],
)
def test_bad_policies_are_rejected_with_the_field_named(policy: dict, users: dict | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PolicySet([policy], users)
