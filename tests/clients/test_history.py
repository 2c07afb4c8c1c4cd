"""History made through the lakeFS REST API mirrors commit for commit.

Data goes in with boto3 through the source's S3 gateway; history is made with ``lakefs_sdk``: commits with
metadata, a merge, merge conflicts resolved by ``source-wins`` and ``dest-wins``, reverts (of a commit and of
a merge), a cherry-pick, hard resets backwards and forwards, a branch deleted and re-created on other
history, a tag moved, and commits left dangling (referenced only by a tag, or by nothing until a reset
brings one back). Three rounds, each converged and then checked from outside.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from lakefs_sdk.exceptions import NotFoundException

from .conftest import EVERY_ROUTE, Converged
from .outside import RegionClients, assert_mirror_matches
from .users import blob, put

pytestmark = pytest.mark.integration


@EVERY_ROUTE
def test_rest_api_history_mirrors_commit_for_commit(
    via: str,
    dst_region: str,
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    src, dst = clients_for("region-a"), clients_for(dst_region)
    rest, s3 = src.rest, src.s3
    repo = new_repo("region-a")

    def write(
        branch: str, path: str, text: str, content_type: str | None = None, metadata: dict[str, str] | None = None
    ) -> None:
        data = text.encode() + blob(path + text, 40)
        put(s3, repo, branch, path, data, content_type=content_type, metadata=metadata)

    # ---------------------------------------------------------------- round 1
    write("main", "tables/a.csv", "a1", content_type="text/csv")
    write("main", "tables/b.json", "b1", content_type="application/json", metadata={"schema": "v1"})
    write("main", "conflict/src-wins.txt", "base")
    write("main", "conflict/dest-wins.txt", "base")
    c1 = rest.commit(repo, "main", "initial load", {"author": "etl", "run_id": "1", "k=v": "x y"})
    rest.create_tag(repo, "v1", c1)

    rest.create_branch(repo, "feature", "main")
    write("feature", "features/f1.parquet", "f1", content_type="application/vnd.apache.parquet")
    rest.commit(repo, "feature", "feature step 1", {"ticket": "DATA-1"})
    write("feature", "features/f2.parquet", "f2")
    # No metadata on the commit cherry-picked below: see test_cherry_pick_of_a_commit_with_metadata.
    f2 = rest.commit(repo, "feature", "feature step 2")

    write("main", "other/y.txt", "y")
    c2 = rest.commit(repo, "main", "unrelated change on main")
    merge_feature = rest.merge(repo, "feature", "main", message="merge feature", metadata={"reviewed": "yes"})

    for branch, strategy in (("left", "source-wins"), ("right", "dest-wins")):
        rest.create_branch(repo, branch, "main")
        path = f"conflict/{'src' if strategy == 'source-wins' else 'dest'}-wins.txt"
        write(branch, path, f"{branch} side")
        rest.commit(repo, branch, f"{branch} changes {path}")
        write("main", path, "main side")
        rest.commit(repo, "main", f"main changes {path}")
        rest.merge(repo, branch, "main", strategy=strategy, message=f"merge {branch} ({strategy})")
    assert s3.get_object(Bucket=repo, Key="main/conflict/src-wins.txt")["Body"].read().startswith(b"left side")
    assert s3.get_object(Bucket=repo, Key="main/conflict/dest-wins.txt")["Body"].read().startswith(b"main side")

    rest.revert(repo, "main", c2)  # a plain commit
    rest.revert(repo, "main", merge_feature, parent_number=1)  # a merge, relative to main's side
    rest.create_branch(repo, "hotfix", "v1")
    rest.cherry_pick(repo, "hotfix", f2)

    # Dangling commits: one kept only by a tag, one by nothing at all.
    rest.create_branch(repo, "tmp", "main")
    write("tmp", "scratch/tagged-only.bin", "tagged")
    tagged_only = rest.commit(repo, "tmp", "kept only by tag 'orphan'")
    rest.create_tag(repo, "orphan", tagged_only)
    rest.delete_branch(repo, "tmp")
    rest.create_branch(repo, "tmp2", "main")
    write("tmp2", "scratch/unreferenced.bin", "nobody")
    unreferenced = rest.commit(repo, "tmp2", "referenced by nothing once tmp2 is gone")
    rest.delete_branch(repo, "tmp2")
    main_round1 = rest.head(repo, "main")

    name = new_mirror(repo, dst_region)
    converge(name, dst_region, via=via)
    report = assert_mirror_matches(src, repo, dst, name)
    assert set(report.branches) == {"main", "feature", "left", "right", "hotfix"}
    assert set(report.tags) == {"v1", "orphan"}
    assert len(rest.log(repo, "main")) >= 12

    # ---------------------------------------------------------------- round 2
    rest.hard_reset(repo, "main", c2)  # backwards
    rest.delete_branch(repo, "feature")  # re-created on other history under the same name
    rest.create_branch(repo, "feature", "v1")
    write("feature", "features/rewritten.parquet", "new feature")
    rest.commit(repo, "feature", "feature, second life", {"generation": "2"})
    rest.move_tag(repo, "v1", main_round1)
    write("left", "left/more.txt", "more")
    rest.commit(repo, "left", "left moves on")
    rest.hard_reset(repo, "hotfix", "left")  # forwards onto other work

    converge(name, dst_region, via=via)
    assert_mirror_matches(src, repo, dst, name)
    assert dst.rest.head(name, "main") == c2

    # ---------------------------------------------------------------- round 3
    rest.hard_reset(repo, "main", main_round1)  # forwards again, to a commit the mirror already has
    rest.delete_tag(repo, "orphan")  # its commit is now referenced by nothing
    rest.hard_reset(repo, "right", unreferenced)  # a commit never reachable from a ref before
    write("main", "tables/a.csv", "a3", content_type="text/csv")
    rest.commit(repo, "main", "round 3", {"round": "3"})

    converge(name, dst_region, via=via)
    report = assert_mirror_matches(src, repo, dst, name)
    assert set(report.tags) == {"v1"} and report.branches["right"] == unreferenced


def test_cherry_pick_of_a_commit_with_metadata(
    clients_for: Callable[[str], RegionClients],
    new_repo: Callable[..., str],
    new_mirror: Callable[..., str],
    converge: Callable[..., Converged],
) -> None:
    """A cherry-picked commit that carries user metadata mirrors like any other, or, when the source lakeFS
    cannot serve it as committed, blocks only the refs whose history holds it, saying why.

    lakeFS v1.84.0 corrupts its in-memory commit cache here: ``CherryPick`` (pkg/graveler/graveler.go:3031)
    gives the new commit the *cached* source commit's metadata map and then adds ``cherry-pick-origin`` and
    ``cherry-pick-committer`` to it (3041-3042). Until the cache expires or lakeFS restarts, ``GET
    /repositories/{repo}/commits/{picked}`` answers with that metadata and with an ID recomputed from it
    (another commit's ID, or one that does not exist), so nobody can read the picked commit as it was
    committed, and the mirror must not invent it.
    """
    src, dst = clients_for("region-a"), clients_for("region-b")
    rest = src.rest
    repo = new_repo("region-a")
    put(src.s3, repo, "main", "base.txt", b"base")
    base = rest.commit(repo, "main", "base")
    rest.create_branch(repo, "feature", "main")
    put(src.s3, repo, "feature", "picked.txt", b"picked")
    picked = rest.commit(repo, "feature", "to be picked", {"ticket": "DATA-7"})
    rest.create_branch(repo, "release", base)
    rest.cherry_pick(repo, "release", picked)

    name = new_mirror(repo, "region-b")
    try:
        seen = rest.commits.get_commit(repo, picked)
        answer = "wrong" if (seen.id, seen.metadata) != (picked, {"ticket": "DATA-7"}) else "as committed"
    except NotFoundException:  # the same cache bug, seen by lakeFS's own lookup: the picked commit is not found
        answer = "not found"
    if answer == "as committed":  # a lakeFS without the cache bug
        converge(name, "region-b")
        assert_mirror_matches(src, repo, dst, name)
        return
    expected = f"answered commit .* when asked for {picked}" if answer == "wrong" else "branch feature"
    with pytest.raises(AssertionError, match=expected) as blocked:
        converge(name, "region-b")
    assert "branch feature" in str(blocked.value) and "branch main" not in str(blocked.value), blocked.value
    mirrored = dst.rest.branch_heads(name)
    assert mirrored.get("main") == base and "feature" not in mirrored, mirrored
