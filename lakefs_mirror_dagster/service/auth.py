"""Authentication of API callers with their lakeFS credentials, checked by the source region's lakeFS.

The service holds no user database: a caller is whoever the source lakeFS says the key belongs to.
Positive answers may be cached (``auth.cache``) to spare lakeFS a round trip per request; the cache key
is a salted hash of key and secret, so the process never keeps a caller's secret in memory after a check.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ..lakefs import LakeFSClient

__all__ = ["Authenticator", "Identity", "lakefs_verifier"]


@dataclass(frozen=True)
class Identity:
    """An authenticated caller: the lakeFS user id and the access key id it used."""

    user_id: str
    access_key_id: str


def lakefs_verifier(endpoint: str, *, timeout_s: float = 10.0) -> Callable[[str, str], str]:
    """A check that asks the lakeFS at ``endpoint`` who the credentials belong to (raises on failure)."""

    def verify(access_key_id: str, secret_access_key: str) -> str:
        client = LakeFSClient(endpoint, access_key_id, secret_access_key, attempts=1, timeout_s=timeout_s)
        try:
            return client.whoami()
        finally:
            client.close()

    return verify


class Authenticator:
    """Checks credentials with ``verify`` and caches successes for ``ttl_s`` (LRU of ``size`` entries).

    ``verify(key, secret)`` returns the user id or raises (``LakeFSUnauthorized`` for bad credentials,
    ``LakeFSUnavailable`` when lakeFS cannot be asked); failures are never cached.
    """

    def __init__(
        self,
        verify: Callable[[str, str], str],
        *,
        cache_enabled: bool = False,
        cache_size: int = 1024,
        ttl_s: float = 20.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._verify = verify
        self._enabled = cache_enabled
        self._size = max(1, cache_size)
        self._ttl_s = ttl_s
        self._clock = clock
        self._salt = secrets.token_bytes(16)
        self._cache: OrderedDict[bytes, tuple[float, Identity]] = OrderedDict()
        self._lock = threading.Lock()
        self.verifications = 0

    def _key(self, access_key_id: str, secret_access_key: str) -> bytes:
        h = hashlib.sha256(self._salt)
        for part in (access_key_id, secret_access_key):
            data = part.encode()
            h.update(len(data).to_bytes(8, "big") + data)
        return h.digest()

    def authenticate(self, access_key_id: str, secret_access_key: str) -> Identity:
        """The caller's identity; raises whatever ``verify`` raises for bad or uncheckable credentials."""
        key = self._key(access_key_id, secret_access_key) if self._enabled else b""
        if self._enabled:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None and hit[0] > self._clock():
                    self._cache.move_to_end(key)
                    return hit[1]
                self._cache.pop(key, None)
        self.verifications += 1
        identity = Identity(self._verify(access_key_id, secret_access_key), access_key_id)
        if self._enabled:
            with self._lock:
                self._cache[key] = (self._clock() + self._ttl_s, identity)
                self._cache.move_to_end(key)
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        return identity

    def cached_keys(self) -> list[bytes]:
        """The cache's keys (for tests: they must not contain the secret)."""
        with self._lock:
            return list(self._cache)
