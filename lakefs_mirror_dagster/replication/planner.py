"""Which source commits the destination lacks, parents first.

A commit record is only ever created after all its parents exist at the destination (we create them in
this order), so a commit that exists there has its whole ancestry there: the walk stops at it. Down a chain of
first parents the missing commits therefore come first, and the walk finds where they end by galloping and
bisecting: a first sync of 5,000 commits asks the destination about 25 questions, not 5,000.

The walk reads the source's commit log from the head, ``log_page_size`` commits a page, and only as far as it
needs: the missing commits are the newest, so a branch a few commits ahead costs one page, not one request per
commit. One planner is shared by an engine's branch workers: its caches only grow, one dict or set operation at
a time, and each walk has its own log reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ..graveler import commit_id as compute_commit_id
from ..lakefs import Commit, LakeFSClient, LakeFSNotFound
from .errors import ReplicationError

__all__ = ["CommitPlanner", "id_of_fields"]

_MAX_COMMITS = 10_000_000


class CommitPlanner:
    """Walks the source history once per sync, remembering what it learned across refs."""

    def __init__(
        self,
        source: LakeFSClient,
        source_repo: str,
        destination: LakeFSClient,
        mirror_repo: str,
        *,
        log_page_size: int = 1000,
        known_times: Mapping[str, int] | None = None,
    ) -> None:
        self._source, self._source_repo = source, source_repo
        self._known_times = dict(known_times or {})
        self._destination, self._mirror_repo = destination, mirror_repo
        self._log_page_size = log_page_size
        self._present: set[str] = set()
        self._commits: dict[str, Commit] = {}

    def exists_at_destination(self, commit_id: str) -> bool:
        """Whether the mirror has the commit. Its record, when it hashes to its ID, is the source's (the ID is a
        hash of the fields) and is remembered as such: a parent found at the mirror is not read from the source."""
        if commit_id in self._present:
            return True
        try:
            commit = self._destination.get_commit(self._mirror_repo, commit_id)
        except LakeFSNotFound:
            return False
        self._present.add(commit_id)
        if commit.id == commit_id == id_of_fields(commit):
            self._commits.setdefault(commit_id, commit)
        return True

    def mark_present(self, commit_ids: Iterable[str]) -> None:
        self._present.update(commit_ids)

    def is_ancestor(self, old: str, new: str) -> bool:
        """Whether ``old`` is an ancestor of (or is) ``new`` in the source's history: a move from ``old`` to
        ``new`` is a fast-forward (bounded walk over commits this planner reads and caches)."""
        seen, stack = set(), [new]
        for _ in range(100_000):
            if not stack:
                return False
            cid = stack.pop()
            if cid == old:
                return True
            if cid in seen:
                continue
            seen.add(cid)
            stack.extend(self.source_commit(cid).parents)
        return False

    def source_commit(self, commit_id: str) -> Commit:
        commit = self._commits.get(commit_id)
        if commit is None:
            commit = self._checked(self._source.get_commit(self._source_repo, commit_id), commit_id)
        return commit

    def commit_time(self, commit_id: str) -> int:
        """The source commit's creation time (seconds): a commit's fields never change, so a time known already
        is the one the source would answer."""
        known = self._known_times.get(commit_id)
        return known if known is not None else self.source_commit(commit_id).creation_date

    def _checked(self, commit: Commit, commit_id: str) -> Commit:
        """``commit`` remembered, once it is the commit asked for."""
        if commit.id != commit_id:  # lakeFS 1.84's cherry-pick can rewrite a cached commit in place
            raise ReplicationError(
                f"the source lakeFS answered commit {commit.id} when asked for {commit_id} of {self._source_repo}; "
                "its commit cache is inconsistent (a known lakeFS 1.84 effect of cherry-picking a commit with "
                "metadata): restart the source lakeFS"
            )
        self._commits[commit_id] = commit
        return commit

    def _from_log(self, log: Iterator[Commit], commit_id: str) -> Commit:
        """``commit_id`` read from the head's log (further pages only when it is not in those read so far)."""
        try:
            while commit_id not in self._commits and (commit := next(log, None)) is not None:
                self._commits.setdefault(commit.id, commit)
        except LakeFSNotFound:  # a log lakeFS cannot serve (its 1.84 commit cache, see below): ask commit by commit
            pass
        # Not in the log (a lakeFS answering another ID, see _checked): asked alone, the answer checked.
        return self.source_commit(commit_id)

    def missing_commits(self, head: str) -> list[Commit]:
        """Every commit reachable from ``head`` (merge parents too) missing at the destination, parents first."""
        missing: dict[str, Commit] = {}
        stack = [head]
        log = self._source.log_commits(self._source_repo, head, page_size=self._log_page_size)
        while stack:
            cid = stack.pop()
            if cid in missing or self.exists_at_destination(cid):
                continue
            for commit in self._missing_run(log, cid, missing):
                missing[commit.id] = commit
                stack.extend(p for p in commit.parents[1:] if p not in missing)  # merge parents: walked alike
            if len(missing) > _MAX_COMMITS:
                raise ReplicationError(f"history of {head} exceeds {_MAX_COMMITS} missing commits")
        return _parents_first(missing)

    def _missing_run(self, log: Iterator[Commit], cid: str, missing: Mapping[str, Commit]) -> list[Commit]:
        """``cid`` (missing at the destination) and the first parents below it that are missing too, newest first.

        A commit at the destination has its whole ancestry there, so along a first-parent chain the missing
        commits come first and the present ones after: the boundary is found by galloping down the chain and
        bisecting (about ``2 log2 n`` questions to the destination for ``n`` missing commits, not ``n``). The
        chain read from the source's log stops at a commit known present or already found missing."""
        chain = [self._from_log(log, cid)]

        def next_id() -> str | None:
            """The first parent of the chain's last commit, unless the chain ends there (known present, or
            found missing by an earlier run)."""
            parents = chain[-1].parents
            if not parents or parents[0] in missing or parents[0] in self._present:
                return None
            return parents[0]

        def reach(index: int) -> int:
            """Read the chain's commits up to before ``index``: the highest index whose ID is known then, short of
            ``index`` where the chain ends. The ID one past the commits read is a parent's, known unread: a
            one-commit change asks the destination about its parent without reading it from the source."""
            while len(chain) < index and (parent := next_id()) is not None:
                chain.append(self._from_log(log, parent))
            return min(index, len(chain) if next_id() is not None else len(chain) - 1)

        def id_at(index: int) -> str:
            return chain[index].id if index < len(chain) else chain[-1].parents[0]

        low, high, step = 0, len(chain), 1  # chain[low] is missing; from ``high`` on present (or past the end)
        while True:
            probe = reach(low + step)
            if probe == low:
                high = len(chain)
                break
            if self.exists_at_destination(id_at(probe)):
                high = probe
                break
            if probe == len(chain):  # missing, so its commit is needed: read it
                chain.append(self._from_log(log, id_at(probe)))
            low, step = probe, step * 2
        while high - low > 1:
            middle = (low + high) // 2
            if self.exists_at_destination(chain[middle].id):
                high = middle
            else:
                low = middle
        return chain[:high]


def id_of_fields(commit: Commit) -> str:
    """The ID lakeFS computes from the commit's fields: a commit whose ``id`` differs is not what it says."""
    fields = (commit.committer, commit.message, commit.metarange_id, commit.creation_date, commit.metadata)
    return compute_commit_id(*fields, list(commit.parents))


def _parents_first(commits: dict[str, Commit]) -> list[Commit]:
    """Topological order (Kahn), ties broken by generation then ID so the order is deterministic."""
    children: dict[str, list[str]] = {cid: [] for cid in commits}
    pending: dict[str, int] = {}
    for cid, c in commits.items():
        local_parents = [p for p in c.parents if p in commits]
        pending[cid] = len(local_parents)
        for p in local_parents:
            children[p].append(cid)
    ready = sorted((c for c in commits.values() if pending[c.id] == 0), key=lambda c: (c.generation, c.id))
    ordered: list[Commit] = []
    while ready:
        c = ready.pop(0)
        ordered.append(c)
        for child in children[c.id]:
            pending[child] -= 1
            if pending[child] == 0:
                ready.append(commits[child])
        ready.sort(key=lambda c: (c.generation, c.id))
    if len(ordered) != len(commits):
        raise ReplicationError("commit graph has a cycle; refusing to replicate it")
    return ordered
