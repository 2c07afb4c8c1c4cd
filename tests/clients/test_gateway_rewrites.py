"""Keys written with boto3, through the source lakeFS's S3 gateway, between existing keys: lakeFS rewrites the
range that holds them, and the mirror copies only the objects that changed (the new range is merged with its
validated base by graveler's C loops), through ``sync`` and through a Dagster run."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import Converged
from .outside import RegionClients, assert_mirror_matches
from .users import blob, put

pytestmark = pytest.mark.integration


def _key(i: int) -> str:
    return f"events/part-{i:05d}.json"


def test_keys_written_between_keys_mirror_only_what_changed(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    src, dst = clients_for("region-a"), clients_for("region-c")
    repo = new_repo("region-a")
    for i in range(0, 120, 2):
        put(src.s3, repo, "main", _key(i), blob(f"first:{i}", 200 + i))
    src.rest.commit(repo, "main", "sixty objects")
    name = new_mirror(repo, "region-c")
    converge(name, "region-c")

    put(src.s3, repo, "main", _key(41), blob("inserted", 333))  # between two existing keys
    put(src.s3, repo, "main", _key(80), blob("rewritten", 90))  # an existing key, other bytes
    src.rest.commit(repo, "main", "one key inserted, one rewritten")
    main = converge(name, "region-c").ref("branch", "main")
    assert (main.stats.objects_copied, main.stats.objects_unchanged) == (2, 59), main.stats
    assert_mirror_matches(src, repo, dst, name)

    put(src.s3, repo, "main", _key(61), blob("inserted under Dagster", 77))
    src.rest.commit(repo, "main", "one more key between keys")
    assert "main" in converge(name, "region-c", via="dagster").runs
    assert_mirror_matches(src, repo, dst, name)
