"""What happens when two writers race on one mirror, for every mirrors database.

A compare-and-set that lost to another writer becomes ``ConcurrentUpdate`` for a caller that named a
generation, or a fresh attempt (``LostRace``) for one that did not, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .errors import ConcurrentUpdate

__all__ = ["CAS_RETRIES", "LostRace", "conflict", "settle"]

T = TypeVar("T")

#: Attempts of a compare-and-set without an expected generation before giving up.
CAS_RETRIES = 20


class LostRace(Exception):
    """Internal: a compare-and-set lost to a concurrent writer; re-read and decide again."""


def conflict(mirror_id: str, expected: int, actual: int | None) -> ConcurrentUpdate:
    """The error for a mirror that is no longer at the generation the caller expected."""
    now = f"it is now at generation {actual}" if actual is not None else "another writer changed it first"
    return ConcurrentUpdate(
        f"mirror {mirror_id!r} is no longer at generation {expected}: {now}",
        mirror_id=mirror_id,
        expected=expected,
        actual=actual,
    )


def settle(attempt: Callable[[], T], mirror_id: str, expected_generation: int | None) -> T:
    """Run ``attempt`` (read, decide, compare-and-set) until it does not raise ``LostRace``: at once
    ``ConcurrentUpdate`` for a caller that named a generation, else up to ``CAS_RETRIES`` times."""
    for _ in range(CAS_RETRIES):
        try:
            return attempt()
        except LostRace:
            if expected_generation is not None:
                raise conflict(mirror_id, expected_generation, None) from None
    raise ConcurrentUpdate(
        f"mirror {mirror_id!r} kept changing under us ({CAS_RETRIES} attempts)",
        mirror_id=mirror_id,
        expected=None,
        actual=None,
    )
