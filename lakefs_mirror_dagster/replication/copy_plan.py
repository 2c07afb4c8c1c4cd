"""The copies one range needs: shared by the in-process transfer and the Spark task, so both count alike.

Only the range's changed entries (``range_changes``) are planned; those unchanged from its validated bases
are counted as such without a look.

In ``transfer.mode: external`` the same classification runs without copies: the entries that copy mode would
copy are counted as awaited from the store's replication instead (nothing is located or looked at).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..storage import Blockstore, CopyTask, ObjectStat, join_namespace, listed_stats
from .range_changes import RangeChanges
from .validation import MAX_REPORTED

__all__ = ["ObjectLocator", "RangeCopies", "plan_range_copies"]

#: Where the source serves an object, given its key and address: its store and URI there.
ObjectLocator = Callable[[str, str], tuple[Blockstore, str]]


@dataclass
class RangeCopies:
    """The copy tasks of one range, what the destination was found to hold already, and the entries that
    need no copy: unchanged from a validated base range, or imported (full addresses, never copied).
    ``awaited``: entries left to the store's own replication (``copy_objects=False``), in place of tasks."""

    tasks: list[CopyTask] = field(default_factory=list)
    destination_stats: dict[str, ObjectStat | None] = field(default_factory=dict)
    objects: int = 0
    unchanged: int = 0
    full_address_count: int = 0
    full_address_examples: list[str] = field(default_factory=list)
    awaited: int = 0


def plan_range_copies(
    changes: RangeChanges,
    *,
    locate: ObjectLocator,
    destination: Blockstore,
    destination_namespace: str,
    copy_objects: bool = True,
    present: Mapping[str, ObjectStat] | None = None,
) -> RangeCopies:
    """One copy task per changed entry with a relative address, and the destination's stats of their targets
    as far as listing its directories settles them (the rest get a HEAD in the pool). Without ``copy_objects``
    those entries are only counted (``awaited``): validation finds whether they arrived. ``present``: targets
    known to hold their objects already (the engine's copy ahead stored them, checked), neither listed nor
    HEADed again."""
    plan = RangeCopies(objects=changes.objects, unchanged=changes.unchanged)
    for key, address, is_full, size, etag in changes.entries:
        if is_full:  # imported objects live outside the namespace: counted, not copied
            plan.full_address_count += 1
            if len(plan.full_address_examples) < MAX_REPORTED:
                plan.full_address_examples.append(address)
            continue
        if not copy_objects:
            plan.awaited += 1
            continue
        src_store, src_uri = locate(key.decode(), address)
        dst_uri = join_namespace(destination_namespace, address)
        plan.tasks.append(CopyTask(src_store, src_uri, destination, dst_uri, size, etag))
    known = present or {}
    plan.destination_stats = listed_stats(destination, (t.dst_uri for t in plan.tasks if t.dst_uri not in known))
    plan.destination_stats.update((t.dst_uri, known[t.dst_uri]) for t in plan.tasks if t.dst_uri in known)
    missing = [t for t in plan.tasks if plan.destination_stats.get(t.dst_uri) is None]
    for store in {id(t.src_store): t.src_store for t in missing}.values():
        reads = [t for t in missing if t.src_store is store]
        store.prepare_reads([t.src_uri for t in reads], [t.size for t in reads])
    return plan
