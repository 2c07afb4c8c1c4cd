"""Regions sharing a mirrors database: one organisation proves one ``auth.encrypt.secret_key``, and a
region of another organisation sees none of the first one's mirrors.

No lakeFS is needed: the service checks the organisation when it opens the mirrors database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakefs_mirror_dagster.config import ConfigError, parse_config
from lakefs_mirror_dagster.mirrors import MirrorNotFound
from lakefs_mirror_dagster.region import ReplicationService
from tests.mirrors.conftest import db_url, pg_server, pg_url  # noqa: F401 (fixtures)

SECRET = "first-regions-secret-0123456789"
OTHER_SECRET = "other-secret-9876543210-abcdef"


def _database(url: str) -> dict[str, Any]:
    if url.startswith("sqlite:///"):
        return {"type": "sqlite", "sqlite": {"path": url.removeprefix("sqlite:///")}}
    return {"type": "postgres", "postgres": {"connection_string": url}}


def _service(url: str, region: str, *, org: str = "org-one", secret: str = SECRET) -> ReplicationService:
    """A region's service, as the CLI, ``serve`` and the Dagster resource build it from its config."""
    config = parse_config(
        {
            "region": region,
            "organization_id": org,
            "regional_endpoint": f"http://lakefs-{region}:8000",
            "blockstore": {"type": "s3", "s3": {"region": "us-east-1"}},
            "auth": {"encrypt": {"secret_key": secret}},
            "lakefs": {"access_key_id": "AKIAREPLICATOR", "secret_access_key": "replicator-secret"},
            "mirrors_database": _database(url),
        },
        env={},
    )
    return ReplicationService(config)


def _add_mirror(service: ReplicationService, name: str, *, destination: str) -> str:
    """A mirror record of the service's organisation (as ``create_mirror`` writes it, minus the lakeFS checks)."""
    return service.mirrors.create_mirror(
        organization_id=service.config.organization_id,
        source_region="region-a",
        source_repository="repo",
        name=name,
        destination_region=destination,
        storage_namespace=f"s3://bucket/{name}",
    ).id


def test_regions_of_one_organisation_with_the_same_key_both_start(db_url: str) -> None:  # noqa: F811
    first = _service(db_url, "region-a")
    second = _service(db_url, "region-b")
    try:
        mirror_id = _add_mirror(first, "mirror-one", destination="region-b")
        assert [m.id for m in second.my_mirrors()] == [mirror_id]
        assert second.get_mirror(mirror_id).name == "mirror-one"
    finally:
        first.close()
        second.close()
    _service(db_url, "region-a").close()  # a restart is the same region again


def test_a_region_with_another_key_is_refused_without_showing_it(db_url: str) -> None:  # noqa: F811
    _service(db_url, "region-a").close()
    with pytest.raises(ConfigError) as refused:
        _service(db_url, "region-b", secret=OTHER_SECRET)
    message = str(refused.value)
    assert refused.value.path == "auth.encrypt.secret_key"
    assert "must match the other regions' auth.encrypt.secret_key" in message
    assert "region-a" in message  # which region recorded the organisation's key
    assert SECRET not in message and OTHER_SECRET not in message
    # The refused region wrote nothing: the first region still starts, and the other key is still refused.
    _service(db_url, "region-c").close()
    with pytest.raises(ConfigError):
        _service(db_url, "region-a", secret=OTHER_SECRET)


def test_the_key_is_never_written_to_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mirrors.db'}"
    _service(url, "region-a").close()
    with pytest.raises(ConfigError):
        _service(url, "region-b", secret=OTHER_SECRET)
    written = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("mirrors.db"))
    assert b"org-one" in written  # the scan reads what the region recorded
    for secret in (SECRET, OTHER_SECRET):
        assert secret.encode() not in written
        assert secret.encode().hex().encode() not in written


def test_another_organisation_starts_and_sees_none_of_the_first_ones_mirrors(db_url: str) -> None:  # noqa: F811
    first = _service(db_url, "region-a")
    other = _service(db_url, "region-b", org="org-two", secret=OTHER_SECRET)
    try:
        theirs = _add_mirror(first, "theirs", destination="region-b")
        mine = _add_mirror(other, "mine", destination="region-b")
        assert [m.id for m in other.my_mirrors()] == [mine]
        assert [m.id for m in other.iter_mirrors()] == [mine]
        assert [m.id for m in other.list_mirrors(source_repository="repo").mirrors] == [mine]
        with pytest.raises(MirrorNotFound):
            other.get_mirror(theirs)
        with pytest.raises(MirrorNotFound):
            other.mirror_named("theirs", "region-b")
        assert [m.id for m in first.iter_mirrors()] == [theirs]
        assert other.fail_storeless_mirrors() == {}  # the other organisation's mirrors are not its to fail
    finally:
        first.close()
        other.close()
