"""``SourceCommitTimes``: the source's sub-second commit times from its refs dump, reading only the dump's
commit ranges that can hold the commits asked about (lakeFS itself is in ``test_log_order.py``)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from lakefs_mirror_dagster.graveler import CommitData
from lakefs_mirror_dagster.replication.errors import ReplicationError
from lakefs_mirror_dagster.replication.refstore import SourceCommitTimes

from ..spark.synthetic import build_commits_range, build_metarange


def _commit(n: int) -> CommitData:
    return CommitData(
        id=f"{n:02x}" * 32,
        committer="admin",
        message=f"commit {n}",
        creation_date_seconds=1_764_280_000 + n,
        creation_date_nanos=1_000 * n + 7,
        meta_range_id="m" * 64,
        metadata={},
        parents=(),
        version=1,
        generation=n,
    )


class Source:
    """A source whose refs dump holds ``commits`` in ranges of ``per_range``; counts the files read."""

    def __init__(self, commits: list[CommitData], per_range: int) -> None:
        ranges = [build_commits_range(commits[i : i + per_range]) for i in range(0, len(commits), per_range)]
        self.metarange_id, metarange = build_metarange(ranges)
        self.files = {("meta_range", self.metarange_id): metarange, **{("range", r.range_id): r.data for r in ranges}}
        self.reads: list[tuple[str, str]] = []
        self.dumps = 0
        self.submitted = threading.Event()
        self.failures = 0  # dumps still to fail
        refs = SimpleNamespace(commits_meta_range_id=self.metarange_id)
        self.repositories = SimpleNamespace(
            dump_submit=lambda repo: self._submitted(),
            dump_status=lambda repo, task_id: SimpleNamespace(
                done=True, error="disk full" if task_id == "failing" else None, refs=refs
            ),
        )

    def _submitted(self) -> SimpleNamespace:
        self.dumps += 1
        self.submitted.set()
        if self.failures:
            self.failures -= 1
            return SimpleNamespace(id="failing")
        return SimpleNamespace(id="task")

    def call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(*args)

    def read(self, kind: str, file_id: str) -> bytes:
        self.reads.append((kind, file_id))
        return self.files[(kind, file_id)]


def test_only_the_dump_ranges_that_can_hold_a_new_commit_are_read() -> None:
    commits = [_commit(n) for n in range(1, 41)]
    source = Source(commits, per_range=10)
    times = SourceCommitTimes(source, "repo", source.read)  # type: ignore[arg-type]

    assert times.nanos([commits[24].id]) == {commits[24].id: 25_007}
    assert source.reads == [("meta_range", source.metarange_id), ("range", source.reads[1][1])]
    assert len(source.reads) == 2, "every range of the dump was read for one commit"

    # A commit of that range is known now: no second dump; one of another range needs one, and reads its range.
    assert times.nanos([commits[20].id]) == {commits[20].id: 21_007}
    assert source.dumps == 1
    assert times.nanos([commits[3].id, commits[38].id]) == {commits[3].id: 4_007, commits[38].id: 39_007}
    assert source.dumps == 2 and len(source.reads) == 2 + 3


def test_a_commit_the_dump_lacks_is_an_error() -> None:
    source = Source([_commit(n) for n in range(1, 11)], per_range=5)
    times = SourceCommitTimes(source, "repo", source.read)  # type: ignore[arg-type]
    with pytest.raises(ReplicationError, match="lacks commit"):
        times.nanos(["ff" * 32])
    assert [kind for kind, _ in source.reads] == ["meta_range"], "a range that cannot hold it was read"


def test_a_dump_started_ahead_is_the_one_the_times_come_from() -> None:
    """``ahead`` (the pass's plan is known) dumps beside the transfer; the promotion then finds the times."""
    commits = [_commit(n) for n in range(1, 21)]
    source = Source(commits, per_range=10)
    times = SourceCommitTimes(source, "repo", source.read)  # type: ignore[arg-type]

    times.ahead([c.id for c in commits[15:]])
    times.ahead([c.id for c in commits[:5]])  # one under way already: not a second
    assert source.submitted.wait(10), "no dump was started ahead"
    assert times.nanos(c.id for c in commits[15:]) == {c.id: c.creation_date_nanos for c in commits[15:]}
    assert source.dumps == 1
    times.ahead([c.id for c in commits[15:]])  # all known: nothing to dump
    assert source.dumps == 1


def test_a_dump_ahead_that_failed_is_made_again_when_the_times_are_needed() -> None:
    commits = [_commit(n) for n in range(1, 6)]
    source = Source(commits, per_range=10)
    source.failures = 1
    times = SourceCommitTimes(source, "repo", source.read)  # type: ignore[arg-type]
    times.ahead([commits[0].id])
    assert source.submitted.wait(10)
    assert times.nanos([commits[0].id]) == {commits[0].id: commits[0].creation_date_nanos}
    assert source.dumps == 2


def test_the_dump_status_is_first_asked_once_lakefs_had_time_to_finish() -> None:
    """lakeFS dumps in the background: a status asked at once is never done and costs a round trip for nothing.
    This dump is done 40 ms after its submit; the first status, 50 ms after it, finds it done."""
    commits = [_commit(n) for n in range(1, 4)]
    source = Source(commits, per_range=10)
    done_status = source.repositories.dump_status
    statuses: list[bool] = []
    submitted_at: list[float] = []
    submit = source.repositories.dump_submit

    def timed_submit(repo: str) -> Any:
        submitted_at.append(time.monotonic())
        return submit(repo)

    def status(repo: str, task_id: str) -> Any:
        answer = done_status(repo, task_id)
        done = time.monotonic() - submitted_at[-1] >= 0.04
        statuses.append(done)
        return SimpleNamespace(done=done, error=answer.error, refs=answer.refs)

    source.repositories.dump_submit, source.repositories.dump_status = timed_submit, status
    times = SourceCommitTimes(source, "repo", source.read, first_poll_s=0.05)  # type: ignore[arg-type]

    assert times.nanos([commits[1].id]) == {commits[1].id: 2_007}
    assert statuses == [True]

    # a dump still running then is asked again until it is done
    running = iter([False, False])

    def later_status(repo: str, task_id: str) -> Any:
        answer = done_status(repo, task_id)
        done = next(running, True)
        statuses.append(done)
        return SimpleNamespace(done=done, error=answer.error, refs=answer.refs)

    source.repositories.dump_status = later_status
    slow = SourceCommitTimes(source, "repo", source.read, first_poll_s=0.01, poll_interval_s=0.02)  # type: ignore[arg-type]
    statuses.clear()
    assert slow.nanos([commits[2].id]) == {commits[2].id: 3_007}
    assert statuses == [False, False, True]
