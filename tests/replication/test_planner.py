"""The planner trusts no commit the source answers under another ID than the one asked for, by get or in a log."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from lakefs_mirror_dagster.graveler import commit_id
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


def _history(n: int, merges: dict[int, int] | None = None) -> list[Commit]:
    """``n`` commits on one line (index 0 the root), commit ``i`` merging side commit ``merges[i]`` of a side
    line of its own when given; newest last."""
    commits: list[Commit] = []
    for i in range(n):
        parents = (commits[-1].id,) if commits else ()
        if merges and i in merges:
            side = Commit(f"{i:063d}s", (commits[merges[i]].id,), "c", f"side {i}", i, "m" * 64, {}, generation=i)
            commits.append(side)
            parents = (*parents, side.id)
        commits.append(Commit(f"{i:064d}", parents, "c", f"c {i}", i, "m" * 64, {}, generation=i + 1))
    return commits


class _Log:
    """A source whose log lists ``commits`` newest first."""

    def __init__(self, commits: list[Commit]) -> None:
        self.by_id = {c.id: c for c in commits}
        self.commits = commits

    def get_commit(self, repo: str, commit_id: str) -> Commit:
        return self.by_id[commit_id]

    def log_commits(self, repo: str, ref: str, *, page_size: int) -> Iterator[Commit]:
        yield from reversed(self.commits)


class _Present:
    """A destination holding ``present`` commits, counting the questions asked of it."""

    def __init__(self, present: set[str]) -> None:
        self.present = present
        self.asked = 0

    def get_commit(self, repo: str, commit_id: str) -> Commit:
        self.asked += 1
        if commit_id not in self.present:
            raise LakeFSNotFound(f"commit {commit_id} not found", status=404)
        return Commit(commit_id, (), "c", "m", 0, "m" * 64, {})


@pytest.mark.parametrize("present", [0, 1, 700, 999])
def test_the_missing_commits_of_a_long_line_cost_the_destination_a_few_questions(present: int) -> None:
    line = _history(1000)
    mirror = _Present({c.id for c in line[:present]})
    planner = CommitPlanner(_Log(line), "repo", mirror, "mirror")  # type: ignore[arg-type]
    missing = planner.missing_commits(line[-1].id)
    assert [c.id for c in missing] == [c.id for c in line[present:]]
    assert mirror.asked <= 24, f"{mirror.asked} questions to the destination for {1000 - present} missing commits"


@pytest.mark.parametrize("present", [0, 5, 60])
def test_merge_parents_and_their_lines_are_found_missing_too(present: int) -> None:
    commits = _history(120, merges={40: 10, 90: 70})
    ids = [c.id for c in commits]
    # what a mirror can hold: a commit with all its ancestors, here the first ``present`` of the main line
    mirror = _Present(set(ids[: ids.index(f"{present:064d}")]) if present else set())
    planner = CommitPlanner(_Log(commits), "repo", mirror, "mirror")  # type: ignore[arg-type]
    missing = [c.id for c in planner.missing_commits(ids[-1])]
    assert set(missing) == set(ids) - mirror.present
    assert all(
        missing.index(p) < missing.index(c.id) for c in commits if c.id in missing for p in c.parents if p in missing
    )


class _CountingLog(_Log):
    """A source log that counts what is read from it: commits asked one by one, and log pages."""

    def __init__(self, commits: list[Commit]) -> None:
        super().__init__(commits)
        self.gets: list[str] = []
        self.logs = 0

    def get_commit(self, repo: str, commit_id: str) -> Commit:
        self.gets.append(commit_id)
        return super().get_commit(repo, commit_id)

    def log_commits(self, repo: str, ref: str, *, page_size: int) -> Iterator[Commit]:
        self.logs += 1
        yield from super().log_commits(repo, ref, page_size=page_size)


class _Records:
    """A mirror holding the records of ``commits`` as lakeFS answers them."""

    def __init__(self, commits: list[Commit]) -> None:
        self.by_id = {c.id: c for c in commits}

    def get_commit(self, repo: str, commit_id: str) -> Commit:
        if commit_id not in self.by_id:
            raise LakeFSNotFound(f"commit {commit_id} not found", status=404)
        return self.by_id[commit_id]


def _hashed_line(n: int) -> list[Commit]:
    """``n`` commits on one line whose IDs are their fields' hash, as lakeFS makes them; newest last."""
    line: list[Commit] = []
    for i in range(n):
        parents = [line[-1].id] if line else []
        message, metarange, created, metadata = f"commit {i}", f"{i:064x}", 1_700_000_000 + i, {"i": str(i)}
        cid = commit_id("c", message, metarange, created, metadata, parents)
        line.append(Commit(cid, tuple(parents), "c", message, created, metarange, metadata, generation=i + 1))
    return line


def test_a_one_commit_change_reads_neither_the_log_nor_the_parent_from_the_source() -> None:
    """The head's record is read once (its time, before the copy); its parent, at the mirror, is asked about
    there, and what the pass needs of it (its metarange) comes from the mirror's record."""
    line = _hashed_line(5)
    source = _CountingLog(line)
    planner = CommitPlanner(source, "repo", _Records(line[:-1]), "mirror")  # type: ignore[arg-type]
    head, parent = line[-1], line[-2]

    assert planner.source_commit(head.id) == head
    assert [c.id for c in planner.missing_commits(head.id)] == [head.id]
    assert planner.source_commit(parent.id).metarange_id == parent.metarange_id
    assert (source.gets, source.logs) == ([head.id], 0)


def test_a_mirror_record_that_does_not_hash_to_its_id_is_not_taken_for_the_source_s() -> None:
    line = _hashed_line(3)
    forged = dataclasses.replace(line[1], metarange_id="f" * 64)
    source = _CountingLog(line)
    planner = CommitPlanner(source, "repo", _Records([line[0], forged]), "mirror")  # type: ignore[arg-type]
    assert [c.id for c in planner.missing_commits(line[2].id)] == [line[2].id]
    assert planner.source_commit(line[1].id).metarange_id == line[1].metarange_id
