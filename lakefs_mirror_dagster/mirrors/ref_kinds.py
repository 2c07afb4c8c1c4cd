"""The kinds of refs a mirror follows, once for every room: the engine's results, the wake-up queue and the
refs in flight all say ``branch`` or ``tag`` (the values the CLI's JSON and the mirrors database store)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["REF_KINDS", "RefKind"]


class RefKind(StrEnum):
    """What a mirrored ref is."""

    BRANCH = "branch"
    TAG = "tag"


#: The values, for checks and messages: ``("branch", "tag")``.
REF_KINDS: tuple[str, ...] = tuple(kind.value for kind in RefKind)
