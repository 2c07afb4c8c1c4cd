"""transfer.max_bytes_per_second: one token bucket per process bounds the object bytes its copies stream.

The bucket's behaviour is shown on an injected clock (never by how long a test took): bytes handed out over
an observed interval of that clock stay within rate x interval + burst, also with many threads at once.
"""

from __future__ import annotations

import io
import threading

import pytest

from lakefs_mirror_dagster.config import ConfigError, parse_byte_rate
from lakefs_mirror_dagster.storage import TokenBucket, process_limiter, throttled
from tests.config.test_sizes import config_with


class FakeClock:
    """A clock that moves only when something sleeps on it (thread-safe)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def test_the_bucket_holds_its_rate_over_an_observed_interval() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1_000_000, burst=100_000, clock=clock, sleep=clock.sleep)
    started = clock()
    for _ in range(160):
        bucket.take(64 * 1024)
    elapsed = clock() - started
    assert bucket.taken == 160 * 64 * 1024
    # 10.5 MB at 1 MB/s: the clock must have moved at least (bytes - burst) / rate, and not much more.
    assert elapsed == pytest.approx((bucket.taken - bucket.burst) / bucket.rate, rel=0.01)


def test_threads_share_one_bucket() -> None:
    """Eight threads taking at once are scheduled one after another at the rate between them, not each at it:
    with the clock standing still, the latest wake-up any of them is given is (bytes - burst) / rate away."""
    clock = FakeClock()
    wakes: list[float] = []
    lock = threading.Lock()

    def sleep(seconds: float) -> None:
        with lock:
            wakes.append(clock() + seconds)

    bucket = TokenBucket(500_000, burst=50_000, clock=clock, sleep=sleep)

    def work() -> None:
        for _ in range(50):
            bucket.take(10_000)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert bucket.taken == 8 * 50 * 10_000
    assert max(wakes) - clock() == pytest.approx((bucket.taken - bucket.burst) / bucket.rate)
    assert len(wakes) == 8 * 50 - 5  # all but the burst's first five takes wait


def test_an_idle_bucket_gives_a_burst_at_once_then_waits() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1000, burst=500, clock=clock, sleep=clock.sleep)
    bucket.take(500)
    assert clock() == 1000.0  # the burst: no wait
    bucket.take(1000)
    assert clock() == pytest.approx(1001.0)


def test_a_throttled_stream_counts_what_it_read() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10_000, clock=clock, sleep=clock.sleep)
    stream = throttled(io.BytesIO(b"x" * 300_000), bucket)
    assert len(stream.read(100_000)) == 100_000
    buf = bytearray(250_000)
    assert stream.readinto(buf) == 200_000
    assert stream.read() == b""
    assert bucket.taken == 300_000
    assert throttled(io.BytesIO(b""), None).read() == b""


def test_one_bucket_per_process_and_rate() -> None:
    assert process_limiter(0) is None
    assert process_limiter(123_457) is process_limiter(123_457)
    with pytest.raises(ValueError, match="at least 1 byte"):
        TokenBucket(0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50Mbit", 6_250_000),
        ("50 Mbit/s", 6_250_000),
        ("512kbit", 64_000),
        ("1Gbit", 125_000_000),
        ("10MiB", 10 * 1024 * 1024),
        ("10MB/s", 10_000_000),
        ("6250000", 6_250_000),
        (6_250_000, 6_250_000),
        (0, 0),
    ],
)
def test_rates_in_bits_or_bytes(text: str | int, expected: int) -> None:
    assert parse_byte_rate(text) == expected
    assert config_with(max_bytes_per_second=text).transfer.max_bytes_per_second == expected


@pytest.mark.parametrize("text", ["50M", "fast", "-1", "10Mbits"])
def test_a_bad_rate_is_refused_naming_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match=r"transfer\.max_bytes_per_second"):
        config_with(max_bytes_per_second=text)


def test_unset_is_unlimited() -> None:
    assert config_with().transfer.max_bytes_per_second == 0


def test_spark_tasks_each_get_an_equal_share() -> None:
    from lakefs_mirror_dagster.spark.transfer import TransferTarget, task_share

    target = TransferTarget("repo", "s3://a/ns", "s3://b/ns", max_bytes_per_second=6_250_000)
    assert task_share(target, 8).max_bytes_per_second == 781_250
    assert task_share(target, 1) == target
    unlimited = TransferTarget("repo", "s3://a/ns", "s3://b/ns")
    assert task_share(unlimited, 8).max_bytes_per_second == 0


def test_a_limit_with_external_transfer_is_refused() -> None:
    """In external mode the store's replication moves objects: a limit here would do nothing, so it is refused."""
    with pytest.raises(ConfigError, match=r"transfer\.max_bytes_per_second.*transfer\.mode: external"):
        config_with(max_bytes_per_second="50Mbit", mode="external")
    assert config_with(mode="external").transfer.max_bytes_per_second == 0
