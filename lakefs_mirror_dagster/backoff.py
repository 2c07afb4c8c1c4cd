"""The one schedule for waiting before trying again: exponential backoff with full jitter, capped and bounded.

Every caller that retries (lakeFS calls, object copies, mirrors-database transactions, DynamoDB conflicts and
throttled reads, polls of lakeFS tasks) runs a ``Backoff``; only the numbers differ, and only where the protocol
needs it. Callers keep deciding *what* is worth retrying; this module decides how long to wait and when to stop.
Full jitter keeps clients that failed together from retrying together; a server's ``Retry-After`` is honoured.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Backoff", "Retries", "retry_after_seconds"]

#: Largest exponent used: 2**64 times any base is beyond every cap, and ``2.0 ** n`` must not overflow.
_MAX_EXPONENT = 64


@dataclass(frozen=True)
class Backoff:
    """Retry ``n`` (1 for the first retry) waits a uniform time in ``[0, min(cap, base * 2**(n-1))]``, or the
    server's ``Retry-After`` if it sent one, never more than ``cap``. A run stops after ``attempts`` tries in all
    and once ``deadline`` seconds have passed since it began (whichever comes first; at least one is set).

    ``sleep``, ``clock`` and ``uniform`` are the real ones except in unit tests.
    """

    base: float
    cap: float
    attempts: int | None = None
    deadline: float | None = None
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    uniform: Callable[[float, float], float] = field(default=random.uniform, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.base < 0 or self.cap < 0:
            raise ValueError(f"backoff times must not be negative (base {self.base}, cap {self.cap})")
        if self.attempts is None and self.deadline is None:
            raise ValueError("a backoff needs an attempt limit, a deadline or both: it must end")
        if self.attempts is not None and self.attempts < 1:
            raise ValueError(f"a backoff makes at least 1 attempt, got {self.attempts}")
        if self.deadline is not None and self.deadline < 0:
            raise ValueError(f"a backoff deadline must not be negative, got {self.deadline}")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``retry`` (1-based); ``retry_after`` is the server's wish, capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.cap)
        ceiling = min(self.cap, self.base * 2.0 ** min(max(retry - 1, 0), _MAX_EXPONENT))
        return self.uniform(0.0, ceiling)

    def start(self) -> Retries:
        """A new run of this schedule, its first attempt under way."""
        return Retries(self)


class Retries:
    """One run of a ``Backoff``: counts the attempts made and waits before the next, while the limits allow."""

    def __init__(self, policy: Backoff) -> None:
        self.policy = policy
        #: Attempts made so far, the one under way included.
        self.attempts = 1
        self._began = policy.clock()

    def _left(self) -> float | None:
        """Seconds before the deadline (None: no deadline), or 0 when none are left or no attempt is."""
        p = self.policy
        if p.attempts is not None and self.attempts >= p.attempts:
            return 0.0
        if p.deadline is None:
            return None
        return max(0.0, self._began + p.deadline - p.clock())

    def wait(self, retry_after: float | None = None, *, note: Callable[[float], None] | None = None) -> bool:
        """After a failed attempt: False at once when no attempt is left; else wait (``note`` hears how long
        first, for a log line), count the next attempt and return True. The wait ends at the deadline."""
        left = self._left()
        if left is not None and left <= 0:
            return False
        delay = self.policy.delay(self.attempts, retry_after)
        if left is not None:
            delay = min(delay, left)
        if note is not None:
            note(delay)
        self.policy.sleep(delay)
        self.attempts += 1
        return True

    def at_once(self) -> bool:
        """Another attempt without waiting (the failure said what to do differently), if the limits allow."""
        left = self._left()
        if left is not None and left <= 0:
            return False
        self.attempts += 1
        return True


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """An HTTP ``Retry-After`` header (delay in seconds or an HTTP date) as seconds from now; None when absent
    or unreadable (then the schedule's own wait applies)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
