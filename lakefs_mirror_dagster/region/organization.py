"""A region joins its organisation in the mirrors database: same ``organization_id``, same secret key.

Regions sharing a mirrors database must share ``auth.encrypt.secret_key`` (it has to match lakeFS's, and
lakeFS's is one per organisation). The first region of an organisation records a keyed fingerprint of its
key; a later region with another key is refused at start, before it writes anything. A region of another
organisation is welcome: the service then only ever sees its own organisation's mirrors.
"""

from __future__ import annotations

import logging

from ..config import ConfigError, ReplicationConfig
from ..mirrors import MirrorsDatabase, key_fingerprint

__all__ = ["join_organization"]

log = logging.getLogger(__name__)


def join_organization(config: ReplicationConfig, store: MirrorsDatabase) -> None:
    """Record this region's organisation (first region) or check its key against the recorded one;
    ``ConfigError`` on ``auth.encrypt.secret_key`` when it differs (neither key nor fingerprint is shown)."""
    org = config.organization_id
    mine = key_fingerprint(config.auth.encrypt.secret_key.reveal(), org)
    recorded = store.claim_organization(org, mine, config.region)
    if not recorded.matches(mine):
        raise ConfigError(
            f"differs from the key the other regions of organization {org!r} use with this mirrors database "
            f"({store.url}; first recorded by region {recorded.first_region}); it must match the other regions' "
            "auth.encrypt.secret_key (which is also the lakeFS installations' auth.encrypt.secret_key)",
            path="auth.encrypt.secret_key",
        )
    others = [o for o in store.organization_ids() if o != org]
    if others:
        log.info(
            "the mirrors database %s also holds %d other organization(s); region %s sees only the mirrors of %r",
            store.url,
            len(others),
            config.region,
            org,
        )
