"""Where a repository's refs point: the one way the engine and the Dagster sensors read branch heads and tags.

A mirror repository that does not exist yet simply has no refs (``missing_ok``); a source repository that is
gone is an error, never "no branches", which would delete every mirror branch.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..lakefs import LakeFSClient, LakeFSNotFound

__all__ = ["branch_head", "branch_heads", "differing", "tag_commits"]


def branch_head(client: LakeFSClient, repo: str, branch: str) -> str | None:
    """The commit ``branch`` points at, or None when the branch (or the repository) does not exist."""
    try:
        return client.get_branch_head(repo, branch)
    except LakeFSNotFound:
        return None


def branch_heads(client: LakeFSClient, repo: str, *, page_size: int, missing_ok: bool = False) -> dict[str, str]:
    """Branch name -> head commit ID of every branch of ``repo``."""
    try:
        return {r.id: r.commit_id for r in client.list_branches(repo, page_size=page_size)}
    except LakeFSNotFound:
        if missing_ok:
            return {}
        raise


def tag_commits(client: LakeFSClient, repo: str, *, page_size: int, missing_ok: bool = False) -> dict[str, str]:
    """Tag name -> commit ID of every tag of ``repo``."""
    try:
        return {r.id: r.commit_id for r in client.list_tags(repo, page_size=page_size)}
    except LakeFSNotFound:
        if missing_ok:
            return {}
        raise


def differing(source: Mapping[str, str], mirror: Mapping[str, str]) -> list[str]:
    """Names (sorted) whose commit differs between source and mirror, including names on one side only."""
    return sorted(n for n in set(source) | set(mirror) if source.get(n) != mirror.get(n))
