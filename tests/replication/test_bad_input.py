"""Bad input gets a clear error and changes nothing: no mirror record, no repository half-created."""

from __future__ import annotations

import pytest
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.config import ConfigError, load_config, parse_config
from lakefs_mirror_dagster.lakefs import LakeFSNotFound, LakeFSUnavailable
from lakefs_mirror_dagster.mirrors import NamespaceInUse, NamespaceOverlap
from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.replication import ReplicationError
from lakefs_mirror_dagster.storage.uri import namespaces_overlap


def _no_record(service: ReplicationService, name: str) -> bool:
    return all(m.name != name for m in service.mirrors.iter_mirrors())


def test_missing_source_repository(lakefs_env, service_for, unique_name) -> None:
    svc = service_for("region-a")
    name = unique_name("mirror")
    with pytest.raises(LakeFSNotFound, match="no-such-repo"):
        svc.create_mirror(
            source_repository="no-such-repo",
            name=name,
            region="region-b",
            storage_namespace=lakefs_env.region("region-b").namespace_for(name),
        )
    assert _no_record(svc, name)


def test_namespace_already_used_by_another_repository(lakefs_env, service_for, client_for, unique_name) -> None:
    svc = service_for("region-a")
    src = svc.client("region-a")
    repo, other, name = unique_name("repo"), unique_name("other"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    taken = lakefs_env.region("region-b").namespace_for(other)
    client_for("region-b").create_repository(other, taken)
    with pytest.raises(NamespaceInUse, match=other):
        svc.create_mirror(source_repository=repo, name=name, region="region-b", storage_namespace=taken)
    assert _no_record(svc, name)


@pytest.mark.parametrize("relation", ["inside", "around"])
def test_nested_namespaces_are_refused_naming_the_other(
    lakefs_env, service_for, client_for, unique_name, relation: str
) -> None:
    """A mirror inside another mirror's (or repository's) namespace, or around it, is refused: whatever lists
    the outer namespace would reach the inner one's objects."""
    svc = service_for("region-a")
    src = svc.client("region-a")
    repo, first, second = unique_name("repo"), unique_name("mirror"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    outer = lakefs_env.region("region-b").namespace_for(unique_name("shared-ns"))
    existing, new = (outer, f"{outer}/inner") if relation == "inside" else (f"{outer}/inner", outer)
    svc.create_mirror(source_repository=repo, name=first, region="region-b", storage_namespace=existing)
    with pytest.raises(NamespaceOverlap, match=f"{'lies inside' if relation == 'inside' else 'contains'}.*{first}"):
        svc.create_mirror(source_repository=repo, name=second, region="region-b", storage_namespace=new)
    assert _no_record(svc, second)
    # A repository of the region counts as much as a mirror record does.
    own = unique_name("own")
    client_for("region-b").create_repository(own, lakefs_env.region("region-b").namespace_for(own))
    nested = lakefs_env.region("region-b").namespace_for(own) + "/below"
    with pytest.raises(NamespaceOverlap, match=own):
        svc.create_mirror(source_repository=repo, name=second, region="region-b", storage_namespace=nested)


def test_namespaces_overlap_only_at_path_boundaries() -> None:
    assert namespaces_overlap("s3://b/ns", "s3://b/ns/inner") and namespaces_overlap("s3://b/ns/", "s3://b/ns")
    assert not namespaces_overlap("s3://b/ns", "s3://b/ns-2") and not namespaces_overlap("s3://b/a", "s3://c/a")


def test_mirror_name_taken_and_unknown_region(lakefs_env, service_for, unique_name) -> None:
    svc = service_for("region-a")
    src = svc.client("region-a")
    repo = unique_name("repo")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    with pytest.raises(ConfigError, match="region-b"):
        svc.create_mirror(source_repository=repo, name="x-mirror", region="region-x", storage_namespace="local://x")
    existing = unique_name("exists")
    svc.client("region-b").create_repository(existing, lakefs_env.region("region-b").namespace_for(existing))
    with pytest.raises(ReplicationError, match="already exists"):
        svc.create_mirror(
            source_repository=repo, name=existing, region="region-b", storage_namespace="local://elsewhere"
        )
    assert _no_record(svc, existing)


def test_unreachable_region(lakefs_env, config_path, unique_name) -> None:
    raw = load_config(config_path("region-a"), env={}).as_dict(reveal_secrets=True)
    raw["dst_endpoints"]["region-z"] = f"http://127.0.0.1:{free_port()}"
    svc = ReplicationService(parse_config(raw, env={}))
    try:
        src = svc.client("region-a")
        repo, name = unique_name("repo"), unique_name("mirror")
        src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
        with pytest.raises(LakeFSUnavailable, match="unreachable"):
            svc.create_mirror(source_repository=repo, name=name, region="region-z", storage_namespace="s3://b/x")
        assert _no_record(svc, name)
    finally:
        svc.close()
