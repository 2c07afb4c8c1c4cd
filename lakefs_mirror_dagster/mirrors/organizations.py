"""The organisations sharing the mirrors database, each with a keyed fingerprint of its secret key.

Regions of one organisation must share ``auth.encrypt.secret_key``; the database cannot compare keys it
never sees, so the first region records ``HMAC-SHA256(key, label + organization_id)`` and every later
region computes its own and compares. The key itself, or an unkeyed hash of it, is never stored.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime

__all__ = ["Organization", "key_fingerprint"]

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
