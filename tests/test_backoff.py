"""The one retry schedule on a virtual clock: its bounds, full jitter, cap, Retry-After and limits."""

from __future__ import annotations

import dataclasses
import random

import pytest

from lakefs_mirror_dagster.backoff import Backoff, retry_after_seconds


class Clock:
    """``sleep`` and ``monotonic`` on a virtual clock, with every wait recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.waits.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        return self.now


def _policy(clock: Clock, **kwargs: object) -> Backoff:
    rng = random.Random(7)
    return dataclasses.replace(
        Backoff(**kwargs),  # type: ignore[arg-type]
        sleep=clock.sleep,
        clock=clock.monotonic,
        uniform=rng.uniform,
    )


def _retry_all(policy: Backoff) -> int:
    tries = policy.start()
    while tries.wait():
        pass
    return tries.attempts


def test_waits_grow_exponentially_with_full_jitter_up_to_the_cap() -> None:
    clock = Clock()
    policy = _policy(clock, base=0.5, cap=4.0, attempts=2000)
    assert _retry_all(policy) == 2000
    ceilings = [min(4.0, 0.5 * 2 ** min(n, 4)) for n in range(len(clock.waits))]
    assert all(0.0 <= w <= c for w, c in zip(clock.waits, ceilings, strict=True))
    # full jitter: the waits spread over the whole range below each ceiling, not near its top only
    capped = clock.waits[3:]
    assert min(capped) < 0.5 and max(capped) > 3.5
    assert 1.5 < sum(capped) / len(capped) < 2.5


def test_the_jitter_draws_between_zero_and_the_ceiling() -> None:
    asked: list[tuple[float, float]] = []

    def top(low: float, high: float) -> float:
        asked.append((low, high))
        return high

    policy = Backoff(base=0.1, cap=1.0, attempts=6, uniform=top, sleep=lambda _: None)
    assert _retry_all(policy) == 6
    assert asked == [(0.0, 0.1), (0.0, 0.2), (0.0, 0.4), (0.0, 0.8), (0.0, 1.0)]


def test_attempts_are_bounded() -> None:
    clock = Clock()
    tries = _policy(clock, base=0.1, cap=1.0, attempts=3).start()
    assert [tries.wait(), tries.wait(), tries.wait(), tries.wait()] == [True, True, False, False]
    assert tries.attempts == 3 and len(clock.waits) == 2  # no wait before giving up
    assert _retry_all(_policy(Clock(), base=0.1, cap=1.0, attempts=1)) == 1


def test_a_deadline_ends_the_run_and_the_last_wait_stops_at_it() -> None:
    clock = Clock()
    policy = _policy(clock, base=1.0, cap=8.0, deadline=20.0)
    tries = policy.start()
    while tries.wait():
        pass
    assert clock.now == pytest.approx(20.0)  # it never sleeps beyond the deadline
    assert tries.attempts == len(clock.waits) + 1


def test_retry_after_is_honoured_and_capped() -> None:
    clock = Clock()
    tries = _policy(clock, base=0.01, cap=5.0, attempts=10).start()
    tries.wait(retry_after=3.0)
    tries.wait(retry_after=120.0)
    tries.wait(retry_after=-1.0)
    assert clock.waits == [3.0, 5.0, 0.0]


def test_an_immediate_retry_counts_as_an_attempt() -> None:
    clock = Clock()
    tries = _policy(clock, base=0.1, cap=1.0, attempts=2).start()
    assert tries.at_once() and not tries.at_once() and not tries.wait()
    assert clock.waits == []


def test_note_hears_the_wait_before_it_starts() -> None:
    clock = Clock()
    heard: list[tuple[float, int]] = []
    tries = _policy(clock, base=0.0, cap=0.0, attempts=2).start()
    tries.wait(retry_after=0.0, note=lambda s: heard.append((s, len(clock.waits))))
    assert heard == [(0.0, 0)]


def test_huge_retry_numbers_stay_at_the_cap() -> None:
    policy = Backoff(base=0.1, cap=2.0, attempts=10, uniform=lambda a, b: b)
    assert policy.delay(5000) == 2.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base": -1.0, "cap": 1.0, "attempts": 3}, "must not be negative"),
        ({"base": 0.1, "cap": 1.0}, "must end"),
        ({"base": 0.1, "cap": 1.0, "attempts": 0}, "at least 1 attempt"),
        ({"base": 0.1, "cap": 1.0, "deadline": -1.0}, "deadline must not be negative"),
    ],
)
def test_a_schedule_that_would_not_end_or_go_backwards_is_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Backoff(**kwargs)  # type: ignore[arg-type]


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(" 0 ") == 0.0
    now = 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:27:00 GMT", now=now) == 0.0  # already past
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("-5") is None
