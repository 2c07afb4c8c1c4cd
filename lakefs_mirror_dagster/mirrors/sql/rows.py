"""Rows of the ``mirrors`` table as ``Mirror`` dataclasses: the reads every part of the store shares."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from ..models import Mirror, MirrorState
from .schema import mirrors

__all__ = ["first_mirror", "select_mirror", "to_mirror"]


def to_mirror(row: Any) -> Mirror:
    return Mirror(
        id=row["id"],
        organization_id=row["organization_id"],
        source_region=row["source_region"],
        source_repository=row["source_repository"],
        name=row["name"],
        destination_region=row["destination_region"],
        storage_namespace=row["storage_namespace"],
        storage_id=row["storage_id"],
        state=MirrorState(row["state"]),
        message=row["message"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        generation=int(row["generation"]),
    )


def select_mirror(conn: Connection, mirror_id: str) -> Mirror | None:
    return first_mirror(conn, select(mirrors).where(mirrors.c.id == mirror_id))


def first_mirror(conn: Connection, stmt: Any) -> Mirror | None:
    row = conn.execute(stmt).mappings().first()
    return to_mirror(row) if row is not None else None
