"""`lakefs-mirror sync` as an operator runs it: one line per ref, a clear error for an unknown mirror."""

from __future__ import annotations

import json

import pytest

from lakefs_mirror_dagster.cli import main


def test_sync_prints_each_ref(lakefs_env, config_path, service_for, unique_name, capsys) -> None:
    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo, name = unique_name("cli"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "x", b"x")
    src.commit(repo, "main", "x")
    svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    assert main(["--config", str(config_path("region-b")), "sync", "--once", "--mirror", name]) == 0
    out = capsys.readouterr().out
    assert f"mirror {name} <- {repo}" in out and "main" in out and "created" in out
    assert main(["--config", str(config_path("region-b")), "sync", "--once", "--mirror", "nope"]) == 2


def test_deleting_a_mirror_removes_its_repository_and_record(lakefs_env, isolated_regions, unique_name, capsys):
    from lakefs_mirror_dagster.mirrors import MirrorNotFound

    config_path, service_for = isolated_regions  # `sync --once` passes over this test's mirrors only
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    src = svc_a.client("region-a")
    repo, name = unique_name("del"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "x", b"x")
    src.commit(repo, "main", "x")
    mirror = svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    assert svc_b.sync(name=name)[0].ok
    capsys.readouterr()
    assert main(["--config", str(config_path("region-a")), "mirrors", "delete", mirror.id, "--yes"]) == 0
    said = capsys.readouterr().out
    assert f"repository {name} in region region-b is deleted" in said  # says what goes
    assert main(["--config", str(config_path("region-b")), "sync", "--once"]) == 0
    # (getRepository may serve a just-deleted repository from lakeFS's cache; the listing does not.)
    assert name not in {r.id for r in svc_b.client("region-b").list_repositories()}
    with pytest.raises(MirrorNotFound):
        svc_b.mirrors.get_mirror(mirror.id)
    assert src.get_repository(repo).id == repo, "the source is untouched"


def test_mirrors_create_dry_run_checks_everything_and_writes_nothing(
    lakefs_env, config_path, service_for, unique_name, capsys
) -> None:
    from lakefs_mirror_dagster.cli import ExitCode
    from lakefs_mirror_dagster.mirrors import MirrorNotFound

    svc_a = service_for("region-a")
    src = svc_a.client("region-a")
    repo, name = unique_name("dry"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    namespace = lakefs_env.region("region-b").namespace_for(name)
    create = ["mirrors", "create", "--name", name, "--region", "region-b", "--storage-namespace", namespace]
    config = ["--config", str(config_path("region-a"))]

    assert main([*create, "--repository", repo, "--dry-run", *config]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["dry_run"] and doc["would_create"]["name"] == name and doc["would_create"]["state"] == "pending"
    assert "nothing was written" in err
    with pytest.raises(MirrorNotFound):
        svc_a.mirror_named(name, "region-b")
    # Each check of a real create runs: an unknown source repository (asked of lakeFS) is refused.
    assert main([*create, "--repository", unique_name("absent"), "--dry-run", *config]) == ExitCode.USAGE
    assert "not found" in capsys.readouterr().err.lower()

    assert main([*create, "--repository", repo, *config]) == 0  # for real
    assert json.loads(capsys.readouterr().out)["name"] == name
    assert svc_a.mirror_named(name, "region-b").state.value == "pending"
    # Now the name is taken (recorded, its repository not created yet): a dry run on a free namespace says so.
    other = lakefs_env.region("region-b").namespace_for(unique_name("other"))
    again = [*create[:-1], other, "--repository", repo, "--dry-run", *config]
    assert main(again) == ExitCode.USAGE
    assert f"a mirror named {name!r} already exists in region region-b" in capsys.readouterr().err


def test_sync_dry_run_plans_the_refs_and_writes_nothing(
    lakefs_env, config_path, service_for, unique_name, capsys
) -> None:
    svc_a, svc_b = service_for("region-a"), service_for("region-b")
    src, dst = svc_a.client("region-a"), svc_b.client("region-b")
    repo, name = unique_name("plan"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    src.upload_object(repo, "main", "x", b"x")
    first = src.commit(repo, "main", "x").id
    src.create_tag(repo, "v1", first)
    svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )
    dry = ["sync", "--dry-run", "--json", "--mirror", name, "--config", str(config_path("region-b"))]

    def plan() -> dict:
        assert main(dry) == 0
        [doc] = map(json.loads, capsys.readouterr().out.splitlines())
        return doc

    doc = plan()
    assert doc["repository"] == "create" and doc["unchanged"] == 0
    assert {(r["kind"], r["name"], r["action"], r["source_commit"]) for r in doc["refs"]} == {
        ("branch", "main", "create", first),
        ("tag", "v1", "create", first),
    }
    assert name not in {r.id for r in dst.list_repositories()}  # nothing was created
    assert svc_b.mirror_named(name).state.value == "pending"

    assert main(["sync", "--once", "--mirror", name, "--config", str(config_path("region-b"))]) == 0
    capsys.readouterr()
    src.upload_object(repo, "main", "y", b"y")
    second = src.commit(repo, "main", "y").id
    doc = plan()
    assert doc["repository"] == "exists" and doc["unchanged"] == 1  # the tag
    assert doc["refs"] == [
        {"kind": "branch", "name": "main", "action": "move", "source_commit": second, "mirror_commit": first}
    ]
    assert dst.get_branch_head(name, "main") == first  # still where the real pass left it
    # The text form, for people; and the flags a plan has no use for are refused.
    assert main(dry[:2] + dry[3:]) == 0
    assert f"branch main                     would move {first[:12]} -> {second[:12]}" in capsys.readouterr().out
    assert main([*dry, "--spark"]) == 2
    assert "--spark has no use" in capsys.readouterr().err
