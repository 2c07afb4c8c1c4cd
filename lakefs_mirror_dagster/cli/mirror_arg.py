"""A mirror named on the command line by its name or its id, whichever the user has at hand."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..mirrors import Mirror
    from ..region import ReplicationService

__all__ = ["resolve_mirror"]


def resolve_mirror(service: ReplicationService, value: str, *, region: str | None = None) -> Mirror:
    """This organisation's mirror whose id or name is ``value`` (only mirrors of ``region``, when given).

    A name is unique per destination region; the same name in two regions, or a name that is another
    mirror's id, is refused (``MirrorNotFound``) with the candidates' regions and ids rather than guessed."""
    from ..mirrors import MirrorNotFound

    candidates: dict[str, Mirror] = {}
    try:
        by_id = service.get_mirror(value)
        if region is None or by_id.destination_region == region:
            candidates[by_id.id] = by_id
    except MirrorNotFound:
        pass
    filters = {"destination_region": region} if region else {}
    for mirror in service.iter_mirrors(**filters):
        if mirror.name == value:
            candidates[mirror.id] = mirror
    if not candidates:
        where = f" in region {region}" if region else ""
        raise MirrorNotFound(f"no mirror with the name or id {value!r}{where}", mirror_id=value)
    if len(candidates) > 1:
        found = ", ".join(f"{m.name} in {m.destination_region} (id {m.id})" for m in candidates.values())
        raise MirrorNotFound(f"{value!r} names several mirrors: {found}; give the id", mirror_id=value)
    return next(iter(candidates.values()))
