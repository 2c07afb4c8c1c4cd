"""The planner trusts no commit the source answers under another ID than the one asked for, by get or in a log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lakefs_mirror_dagster.lakefs import Commit, LakeFSNotFound
from lakefs_mirror_dagster.replication import ReplicationError
from lakefs_mirror_dagster.replication.planner import CommitPlanner


class _Source:
    """A source lakeFS whose commit cache was rewritten in place (lakeFS 1.84 cherry-pick of a commit with
    metadata): asked for one commit, it answers another."""

    def get_commit(self, repo: str, commit_id: str) -> Commit:
        return Commit("f" * 64, (), "someone", "picked", 1_700_000_000, "m" * 64, {"cherry-pick-origin": commit_id})


def test_a_commit_answered_under_another_id_is_refused_with_a_clear_message() -> None:
    planner = CommitPlanner(_Source(), "repo", object(), "mirror")  # type: ignore[arg-type]
    asked = "a" * 64
    with pytest.raises(ReplicationError, match=f"answered commit {'f' * 64} when asked for {asked}"):
        planner.source_commit(asked)


class _Mirror:
    """A destination that has none of the source's commits yet."""

    def get_commit(self, repo: str, commit_id: str) -> Commit:
        raise LakeFSNotFound(f"commit {commit_id} not found", status=404)


class _LoggingSource(_Source):
    """The same source, whose log either lists the rewritten commit under its recomputed ID or cannot be served."""

    def __init__(self, log_fails: bool) -> None:
        self.log_fails = log_fails

    def log_commits(self, repo: str, ref: str, *, page_size: int) -> Iterator[Commit]:
        if self.log_fails:
            raise LakeFSNotFound(f"commit {ref} not found", status=404)
        yield self.get_commit(repo, ref)


@pytest.mark.parametrize("log_fails", [False, True])
def test_a_head_missing_from_its_own_log_is_refused_with_the_same_message(log_fails: bool) -> None:
    planner = CommitPlanner(_LoggingSource(log_fails), "repo", _Mirror(), "mirror", log_page_size=2)  # type: ignore[arg-type]
    asked = "a" * 64
    with pytest.raises(ReplicationError, match=f"answered commit {'f' * 64} when asked for {asked}"):
        planner.missing_commits(asked)
