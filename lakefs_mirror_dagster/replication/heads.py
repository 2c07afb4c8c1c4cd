"""Where a repository's refs point: the one way the engine and the Dagster sensors read branch heads and tags,
and ``MirrorHeads``, both sides of one mirror as its engine reads them.

A mirror repository that does not exist yet simply has no refs (``missing_ok``); a source repository that is
gone is an error, never "no branches", which would delete every mirror branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..lakefs import LakeFSClient, LakeFSNotFound
from .results import RefKind

__all__ = ["HEAD_READS_MAX", "MirrorHeads", "branch_head", "branch_heads", "differing", "tag_commits"]

#: Named branches up to this many have their heads read one by one (two calls each) instead of both sides listed.
HEAD_READS_MAX = 10


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


@dataclass(frozen=True)
class MirrorHeads:
    """The refs of a source repository and of its mirror repository, side by side."""

    source: LakeFSClient
    source_repo: str
    mirror: LakeFSClient
    mirror_repo: str
    page_size: int

    def branches(
        self, named: set[str] | None, *, mirror_missing_ok: bool = False
    ) -> dict[str, tuple[str | None, str | None]]:
        """Name -> (source head, mirror head) of every branch on either side, or of the ``named`` ones that
        exist on either. A few named branches (a hook's, a retry's) are read one by one rather than listed,
        so their pass costs the same in a repository of ten branches or of ten thousand."""
        if named is not None and len(named) <= HEAD_READS_MAX:
            read = {
                n: (branch_head(self.source, self.source_repo, n), branch_head(self.mirror, self.mirror_repo, n))
                for n in sorted(named)
            }
            return {n: h for n, h in read.items() if h != (None, None)}
        page = self.page_size
        src_branches = branch_heads(self.source, self.source_repo, page_size=page)
        dst_branches = branch_heads(self.mirror, self.mirror_repo, page_size=page, missing_ok=mirror_missing_ok)
        everything = src_branches.keys() | dst_branches.keys()
        names = sorted(everything if named is None else everything & named)
        return {n: (src_branches.get(n), dst_branches.get(n)) for n in names}

    def tags(self) -> tuple[dict[str, str], dict[str, str]]:
        """Tag name -> commit ID at the source and at the mirror (empty for a mirror not created yet)."""
        src = tag_commits(self.source, self.source_repo, page_size=self.page_size)
        return src, tag_commits(self.mirror, self.mirror_repo, page_size=self.page_size, missing_ok=True)

    def mirror_ref(self, kind: RefKind, name: str) -> str | None:
        """The commit the mirror's branch or tag ``name`` points at, or None when it does not exist."""
        if kind == RefKind.BRANCH:
            return branch_head(self.mirror, self.mirror_repo, name)
        try:
            return self.mirror.get_tag(self.mirror_repo, name)
        except LakeFSNotFound:
            return None
