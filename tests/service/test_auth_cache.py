"""Credential checks are cached only when configured, only on success, for the TTL, never keyed by secret."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.lakefs import LakeFSUnauthorized
from lakefs_mirror_dagster.service.auth import Authenticator


class FakeLakeFS:
    def __init__(self) -> None:
        self.calls = 0
        self.users = {("AK1", "s3cret-one"): "alice", ("AK2", "s3cret-two"): "bob"}

    def verify(self, key: str, secret: str) -> str:
        self.calls += 1
        try:
            return self.users[(key, secret)]
        except KeyError:
            raise LakeFSUnauthorized("bad credentials", status=401) from None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cache_disabled_checks_every_time() -> None:
    lakefs = FakeLakeFS()
    auth = Authenticator(lakefs.verify, cache_enabled=False)
    for _ in range(3):
        assert auth.authenticate("AK1", "s3cret-one").user_id == "alice"
    assert lakefs.calls == 3


def test_cache_hits_until_ttl_and_failures_are_not_cached() -> None:
    lakefs, clock = FakeLakeFS(), Clock()
    auth = Authenticator(lakefs.verify, cache_enabled=True, cache_size=10, ttl_s=20, clock=clock)
    assert auth.authenticate("AK1", "s3cret-one").user_id == "alice"
    clock.now += 19
    assert auth.authenticate("AK1", "s3cret-one").user_id == "alice"
    assert lakefs.calls == 1
    clock.now += 2  # past the TTL
    auth.authenticate("AK1", "s3cret-one")
    assert lakefs.calls == 2
    # right key, wrong secret: never answered from the cache
    for _ in range(2):
        with pytest.raises(LakeFSUnauthorized):
            auth.authenticate("AK1", "wrong")
    assert lakefs.calls == 4
    # a revoked key keeps working only until its entry expires
    del lakefs.users[("AK1", "s3cret-one")]
    clock.now += 21
    with pytest.raises(LakeFSUnauthorized):
        auth.authenticate("AK1", "s3cret-one")


def test_cache_is_bounded_lru_and_holds_no_secret() -> None:
    lakefs, clock = FakeLakeFS(), Clock()
    auth = Authenticator(lakefs.verify, cache_enabled=True, cache_size=1, ttl_s=60, clock=clock)
    auth.authenticate("AK1", "s3cret-one")
    auth.authenticate("AK2", "s3cret-two")  # evicts AK1
    auth.authenticate("AK1", "s3cret-one")
    assert lakefs.calls == 3
    keys = auth.cached_keys()
    assert len(keys) == 1
    assert all(b"s3cret" not in k and b"AK" not in k for k in keys)
