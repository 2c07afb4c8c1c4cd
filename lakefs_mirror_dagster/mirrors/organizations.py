"""The organisations sharing the mirrors database, each with a keyed fingerprint of its secret key.

Regions of one organisation must share ``auth.encrypt.secret_key``; the database cannot compare keys it
never sees, so the first region records ``HMAC-SHA256(key, label + organization_id)`` and every later
region computes its own and compares. The key itself, or an unkeyed hash of it, is never stored.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from .inputs import check, utc_now
from .models import PLAIN_ID
from .schema import organizations
from .transactions import Transactions

__all__ = ["Organization", "OrganizationRecords", "key_fingerprint"]

#: Binds a fingerprint to its purpose, so the same HMAC never serves anything else.
_LABEL = b"lakefs-mirror-dagster/organization-key/v1\x00"


def key_fingerprint(secret_key: str, organization_id: str) -> str:
    """The keyed fingerprint (hex) of ``secret_key`` for ``organization_id``: equal keys give equal
    fingerprints; without the key, the fingerprint tells nothing about it."""
    return hmac.new(secret_key.encode(), _LABEL + organization_id.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Organization:
    """An organisation's row: the fingerprint its first region recorded, which region and when."""

    organization_id: str
    key_fingerprint: str
    first_region: str
    created_at: datetime

    def matches(self, fingerprint: str) -> bool:
        """Constant-time comparison with another region's fingerprint."""
        return hmac.compare_digest(self.key_fingerprint, fingerprint)


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
