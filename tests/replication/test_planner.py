"""The planner trusts no commit the source answers under another ID than the one asked for."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.lakefs import Commit
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
