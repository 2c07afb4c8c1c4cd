"""One rule for where a new repository may keep its data: nowhere another one of the region already does.

A namespace equal to another repository's or mirror's is in use; one that contains another, or lies inside
one, is refused too, since whatever lists the outer namespace (a cleanup, garbage collection, a scrub) would
reach the inner one's objects. Mirror creation and ``refs restore`` both ask here.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..lakefs import Repository
from ..mirrors import Mirror, NamespaceInUse, NamespaceOverlap
from ..storage.uri import namespace_prefix, namespaces_overlap, same_namespace

__all__ = ["check_namespace_free", "is_mirror_repository"]


def check_namespace_free(
    namespace: str,
    *,
    where: str,
    repositories: Iterable[Repository],
    mirrors: Iterable[Mirror] = (),
    ignore: str | None = None,
) -> None:
    """Raise NamespaceInUse (the same namespace) or NamespaceOverlap (nested), naming the other repository
    or mirror and ``where`` it is; ``ignore`` is a repository whose namespace does not count (the one being
    replaced)."""
    taken = [("repository", r.id, r.storage_namespace) for r in repositories]
    taken += [("mirror", m.name, m.storage_namespace) for m in mirrors]
    for kind, name, other in taken:
        if name == ignore:
            continue
        if same_namespace(namespace, other):
            raise NamespaceInUse(f"storage namespace {namespace} is already used by {kind} {name} in {where}")
        if namespaces_overlap(namespace, other):
            relation = "lies inside" if len(namespace_prefix(namespace)) > len(namespace_prefix(other)) else "contains"
            raise NamespaceOverlap(
                f"storage namespace {namespace} {relation} {other}, the namespace of {kind} {name} in {where}; "
                "namespaces must not nest (a listing of the outer one would reach the inner one's objects)"
            )


def is_mirror_repository(repo: Repository, mirror_namespace: str) -> bool:
    """Whether ``repo`` is the repository of a mirror on ``mirror_namespace``: read-only and on that namespace.
    A repository with the mirror's name that is writable or elsewhere is someone else's; it is never used,
    moved or deleted as the mirror's."""
    return repo.read_only and same_namespace(repo.storage_namespace, mirror_namespace)
