"""The ``organizations`` table (see ``mirrors/organizations.py`` for what an organisation's fingerprint is):
one row per organisation, claimed by insert-if-absent so the first region's fingerprint is the one kept."""

from __future__ import annotations

import functools

from sqlalchemy import Connection, select

from ..inputs import check, utc_now
from ..models import PLAIN_ID
from ..organizations import Organization
from .schema import organizations
from .transactions import Transactions

__all__ = ["OrganizationRecords"]


def _organization(conn: Connection, *, organization_id: str) -> Organization | None:
    row = conn.execute(select(organizations).where(organizations.c.organization_id == organization_id)).mappings()
    found = row.one_or_none()
    return None if found is None else Organization(**found)


class OrganizationRecords(Transactions):
    """The ``organizations`` table."""

    def claim_organization(self, organization_id: str, fingerprint: str, region: str) -> Organization:
        """Record ``organization_id`` with ``fingerprint`` unless it is recorded already; returns the row
        as it is now (the first claimant's). Safe when regions start at once: insert-if-absent and the
        read run in one transaction, so every caller sees the one row that won."""
        check(PLAIN_ID, "organization_id", organization_id)
        recorded = self._run(functools.partial(_organization, organization_id=organization_id), write=False)
        if recorded is not None:  # the usual case: no write transaction (every run and sensor tick claims)
            return recorded
        row = {
            "organization_id": organization_id,
            "key_fingerprint": fingerprint,
            "first_region": region,
            "created_at": utc_now(),
        }

        def op(conn: Connection) -> Organization:
            conn.execute(self._insert(organizations).values(**row).on_conflict_do_nothing())
            found = _organization(conn, organization_id=organization_id)
            assert found is not None  # inserted, or there already, in this transaction
            return found

        return self._run(op)

    def organization_ids(self) -> list[str]:
        """Every organisation recorded in the database, sorted."""
        stmt = select(organizations.c.organization_id).order_by(organizations.c.organization_id)
        return self._run(lambda c: list(c.execute(stmt).scalars()), write=False)
