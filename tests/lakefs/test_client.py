"""``LakeFSClient`` against a scripted lakeFS: which exception each answer becomes, what is retried, and
how listings page. Real lakeFS is covered by the integration suites; here every answer is chosen."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from itertools import islice

import pytest

from lakefs_mirror_dagster.errors import LakeFSMirrorError
from lakefs_mirror_dagster.lakefs import (
    LakeFSBadRequest,
    LakeFSClient,
    LakeFSConflict,
    LakeFSError,
    LakeFSForbidden,
    LakeFSGone,
    LakeFSNotFound,
    LakeFSUnauthorized,
    LakeFSUnavailable,
)

from .fake_lakefs import FakeLakeFS, fake_lakefs, repository

REPO = "/repositories/repo1"
REPOS = "/repositories"


@pytest.fixture
def fake() -> Iterator[FakeLakeFS]:
    with fake_lakefs() as server:
        yield server


def _client(fake: FakeLakeFS, *, attempts: int = 3) -> LakeFSClient:
    return LakeFSClient(fake.endpoint, "AKIAEXAMPLE", "not-a-secret", attempts=attempts, backoff_s=0, timeout_s=10)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, LakeFSBadRequest),
        (401, LakeFSUnauthorized),
        (403, LakeFSForbidden),
        (404, LakeFSNotFound),
        (409, LakeFSConflict),
        (410, LakeFSGone),
        (429, LakeFSUnavailable),
        (500, LakeFSUnavailable),
        (503, LakeFSUnavailable),
        (418, LakeFSError),
    ],
)
def test_each_status_is_its_exception_quoting_lakefs(fake: FakeLakeFS, status: int, error: type[LakeFSError]) -> None:
    fake.answer(REPO, (status, {"message": "lakeFS says no"}))
    with pytest.raises(LakeFSMirrorError) as caught:
        _client(fake, attempts=1).get_repository("repo1")
    assert type(caught.value) is error
    assert caught.value.status == status
    assert str(caught.value) == f"get repository repo1: lakeFS at {fake.endpoint} answered {status}: lakeFS says no"


def test_streaming_requests_map_statuses_the_same_way(fake: FakeLakeFS) -> None:
    fake.answer(f"{REPO}/refs/main/objects", (404, {"message": "object not found"}))
    with pytest.raises(LakeFSNotFound) as caught:
        _client(fake).open_object("repo1", "main", "a.txt")
    assert str(caught.value) == f"get repo1@main/a.txt: lakeFS at {fake.endpoint} answered 404: object not found"


def test_transient_failures_are_retried_until_an_answer(fake: FakeLakeFS) -> None:
    fake.answer(REPO, (503, {"message": "busy"}), (429, {"message": "slow down"}), (200, repository("repo1")))
    assert _client(fake, attempts=3).get_repository("repo1").storage_namespace == "local://repo1"
    assert len(fake.requests) == 3


def test_retries_are_bounded(fake: FakeLakeFS) -> None:
    fake.answer(REPO, (503, {"message": "busy"}))
    with pytest.raises(LakeFSUnavailable, match="answered 503: busy"):
        _client(fake, attempts=3).get_repository("repo1")
    assert len(fake.requests) == 3


def test_retry_after_is_honoured_up_to_the_cap(fake: FakeLakeFS) -> None:
    """A 429 or 503 with ``Retry-After`` waits what lakeFS (or its proxy) asked, never beyond the 5 s cap; one
    without waits the schedule's jittered time (here at most ``backoff_s``)."""
    waits: list[float] = []
    busy = {"message": "slow down"}
    fake.answer(REPO, (429, busy, {"Retry-After": "2"}), (503, busy, {"Retry-After": "3600"}), (503, busy))
    fake.answer(REPO, (200, repository("repo1")))
    client = LakeFSClient(fake.endpoint, "AKIAEXAMPLE", "not-a-secret", attempts=4, backoff_s=0.01, sleep=waits.append)
    assert client.get_repository("repo1").id == "repo1"
    assert waits[:2] == [2.0, 5.0] and 0 <= waits[2] <= 0.04 and len(waits) == 3


def test_a_retryable_answer_carries_its_retry_after(fake: FakeLakeFS) -> None:
    fake.answer(REPO, (503, {"message": "maintenance"}, {"Retry-After": "30"}))
    with pytest.raises(LakeFSUnavailable) as caught:
        _client(fake, attempts=1).get_repository("repo1")
    assert caught.value.retry_after == 30.0


def test_definite_answers_and_unsafe_calls_are_not_retried(fake: FakeLakeFS) -> None:
    fake.answer(REPO, (404, {"message": "repository not found"}))
    with pytest.raises(LakeFSNotFound):
        _client(fake).get_repository("repo1")
    fake.answer(f"{REPO}/branches", (503, {"message": "busy"}))
    with pytest.raises(LakeFSUnavailable):  # a branch creation might have happened: never sent twice
        _client(fake).create_branch("repo1", "feature", "main")
    assert [r.method for r in fake.requests] == ["GET", "POST"]


def test_an_unreachable_lakefs_is_unavailable_after_the_retries() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LakeFSClient(f"http://127.0.0.1:{port}", "AKIAEXAMPLE", "not-a-secret", attempts=2, backoff_s=0)
    with pytest.raises(LakeFSUnavailable, match="unreachable") as caught:
        client.get_repository("repo1")
    assert caught.value.status == 0


def _page(names: list[str], *, next_offset: str) -> dict[str, object]:
    pagination = {"has_more": bool(next_offset), "next_offset": next_offset, "results": len(names), "max_per_page": 2}
    return {"pagination": pagination, "results": [repository(n) for n in names]}


def test_listings_follow_next_offset_page_by_page(fake: FakeLakeFS) -> None:
    fake.answer(REPOS, (200, _page(["a", "b"], next_offset="b")), (200, _page(["c", "d"], next_offset="d")))
    fake.answer(REPOS, (200, _page(["e"], next_offset="")))
    assert [r.id for r in _client(fake).list_repositories(page_size=2)] == ["a", "b", "c", "d", "e"]
    assert [(r.query.get("after", ""), r.query["amount"]) for r in fake.requests] == [("", "2"), ("b", "2"), ("d", "2")]


def test_listings_fetch_a_page_only_when_it_is_reached(fake: FakeLakeFS) -> None:
    fake.answer(REPOS, (200, _page(["a", "b"], next_offset="b")), (200, _page(["c"], next_offset="")))
    assert [r.id for r in islice(_client(fake).list_repositories(page_size=2), 2)] == ["a", "b"]
    assert len(fake.requests) == 1


def test_a_failing_page_retries_that_page_only(fake: FakeLakeFS) -> None:
    fake.answer(REPOS, (200, _page(["a"], next_offset="a")), (502, {"message": "bad gateway"}))
    fake.answer(REPOS, (200, _page(["b"], next_offset="")))
    assert [r.id for r in _client(fake).list_repositories(page_size=1)] == ["a", "b"]
    assert [r.query.get("after", "") for r in fake.requests] == ["", "a", "a"]


METARANGE = f"{REPO}/metadata/object/meta_range/abc123"


def test_a_metadata_file_is_read_whole_after_transient_failures(fake: FakeLakeFS) -> None:
    """Metadata files are read outside the generated SDK; they keep its retries: a 503 and a body cut short
    are read again, and the bytes come back as lakeFS sent them."""
    data = bytes(range(256)) * 40
    cut = (200, data[:1000], {"Content-Length": str(len(data))})
    fake.answer(METARANGE, (503, {"message": "busy"}), cut, (200, data))
    client = _client(fake, attempts=3)
    assert client.get_metadata_object("repo1", "meta_range", "abc123") == data
    assert [(r.method, r.path) for r in fake.requests] == [("GET", METARANGE)] * 3
    assert client.metadata_reads["meta_range"] == 1


def test_a_missing_metadata_file_is_its_exception(fake: FakeLakeFS) -> None:
    fake.answer(METARANGE, (410, {"message": "gone"}))
    with pytest.raises(LakeFSGone) as caught:
        _client(fake).get_metadata_object("repo1", "meta_range", "abc123")
    assert str(caught.value) == f"download meta_range abc123 of repo1: lakeFS at {fake.endpoint} answered 410: gone"
    assert len(fake.requests) == 1
