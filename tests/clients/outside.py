"""The outside check: a mirror equals its source as users see both, through lakeFS's REST API and S3 gateway.

``assert_mirror_matches(source, repo, mirror, name)`` is the one check every test in ``tests/clients`` ends
with. It looks only through the interfaces users have (``lakefs_sdk`` against ``/api/v1``, boto3 against
each region's S3 gateway), never at the project's database, blockstores or engine results:

1. the branches and the tags, with the commit each points at;
2. the full commit log of every branch and tag, every field of every commit (``same_log``: ties within one
   second may be listed in the other order, see docs/known-limits.md);
3. the mirror repository is read-only: a boto3 ``put_object`` and a ``delete_object`` through the mirror's
   gateway are refused (403) and change nothing;
4. for every distinct commit a branch or tag points at:
   - the REST listing (``user_metadata=true``): the same paths, each with the same checksum, size, mtime,
     Content-Type and user metadata; relative (copied) objects at the same relative address under the
     mirror's namespace, full-address (imported) objects at the very same full address;
   - the gateway listing (``list_objects_v2``, paginated in small pages): the same keys, ETags, sizes and
     modification times;
   - ``head_object`` of every key: the same ETag, Content-Length, Content-Type, user metadata and
     Last-Modified;
   - ``get_object`` of every distinct object: the same bytes (and headers) through both gateways. Objects
     with full addresses outside the repository's namespace are read only when ``full_address_readable``
     (the mirror region's lakeFS may have no access to the store they live in).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from typing import Any

import botocore.exceptions
from lakefs_mirror_devenv import LakeFSRegion

from lakefs_mirror_dagster.lakefs import Commit
from tests.replication.conftest import same_log

from .users import LakeFSRest

__all__ = ["MatchReport", "RegionClients", "assert_mirror_matches", "gateway_keys"]

#: list_objects_v2 page size: small, so every listing of more than a handful of objects pages.
LIST_PAGE = 7
_READ_CHUNK = 1024 * 1024


@dataclasses.dataclass
class RegionClients:
    """A region as a user reaches it: its REST API (``lakefs_sdk``) and its S3 gateway (boto3)."""

    region: LakeFSRegion
    rest: LakeFSRest
    s3: Any

    @property
    def name(self) -> str:
        return self.region.name


@dataclasses.dataclass
class MatchReport:
    """What the check compared (so a test can assert it was not vacuous)."""

    branches: dict[str, str]
    tags: dict[str, str]
    commits_compared: int = 0
    #: (commit, path) pairs compared by REST listing and gateway HEAD.
    entries_compared: int = 0
    #: Distinct objects whose bytes were read through both gateways.
    objects_read: int = 0
    bytes_read: int = 0
    #: Paths of objects with a full address outside the source's namespace (imported), per commit.
    full_address_paths: set[str] = dataclasses.field(default_factory=set)


def assert_mirror_matches(
    source: RegionClients,
    repo: str,
    mirror: RegionClients,
    name: str,
    *,
    full_address_readable: bool = False,
) -> MatchReport:
    """Assert that mirror repository ``name`` in ``mirror`` equals ``repo`` in ``source`` (see module doc)."""
    src_branches = source.rest.branch_heads(repo)
    for branch in src_branches:
        # The gateway lists a branch with its staged changes; a mirror has commits only.
        dirty = source.rest.uncommitted(repo, branch)
        assert not dirty, f"source {repo}/{branch} has uncommitted changes {dirty}: commit before comparing"
    dst_branches = mirror.rest.branch_heads(name)
    assert dst_branches == src_branches, _diff("branches", src_branches, dst_branches)
    src_tags = source.rest.tag_targets(repo)
    dst_tags = mirror.rest.tag_targets(name)
    assert dst_tags == src_tags, _diff("tags", src_tags, dst_tags)
    report = MatchReport(branches=src_branches, tags=src_tags)

    refs = [("branch", b, c) for b, c in sorted(src_branches.items())] + [
        ("tag", t, c) for t, c in sorted(src_tags.items())
    ]
    for kind, ref, _ in refs:
        src_log = [Commit.from_api(c) for c in source.rest.log(repo, ref)]
        dst_log = [Commit.from_api(c) for c in mirror.rest.log(name, ref)]
        assert same_log(dst_log, src_log), _log_diff(f"{kind} {ref}", src_log, dst_log)

    src_repo, dst_repo = source.rest.repository(repo), mirror.rest.repository(name)
    assert dst_repo.read_only, f"mirror repository {name} in {mirror.name} is not read-only"
    _assert_gateway_refuses_writes(mirror, name, src_branches)

    src_ns, dst_ns = src_repo.storage_namespace.rstrip("/"), dst_repo.storage_namespace.rstrip("/")
    by_commit: dict[str, str] = {}  # commit -> the first ref naming it (read through that ref's name)
    for _, ref, commit in refs:
        by_commit.setdefault(commit, ref)
    read: set[tuple[str, str]] = set()  # (path, checksum) already read through both gateways
    for commit, ref in by_commit.items():
        report.commits_compared += 1
        _compare_commit(source, repo, src_ns, mirror, name, dst_ns, ref, commit, report, read, full_address_readable)
    return report


# ---------------------------------------------------------------------------------------------- per commit
def _compare_commit(
    source: RegionClients,
    repo: str,
    src_ns: str,
    mirror: RegionClients,
    name: str,
    dst_ns: str,
    ref: str,
    commit: str,
    report: MatchReport,
    read: set[tuple[str, str]],
    full_address_readable: bool,
) -> None:
    where = f"{ref} ({commit[:12]})"
    src_entries = {o.path: o for o in source.rest.list_objects(repo, ref)}
    dst_entries = {o.path: o for o in mirror.rest.list_objects(name, ref)}
    assert sorted(dst_entries) == sorted(src_entries), _diff(
        f"paths at {where} (REST listing)", dict.fromkeys(src_entries, ""), dict.fromkeys(dst_entries, "")
    )
    full_address: set[str] = set()
    for path, s in src_entries.items():
        d = dst_entries[path]
        fields = ("path_type", "checksum", "size_bytes", "mtime", "content_type")
        got, want = {f: getattr(d, f) for f in fields}, {f: getattr(s, f) for f in fields}
        got["metadata"], want["metadata"] = dict(d.metadata or {}), dict(s.metadata or {})
        assert got == want, f"{where} {path!r}: REST stat differs: source {want}, mirror {got}"
        relative = _relative_address(src_ns, s.physical_address)
        if relative is not None:
            # Copied: the same relative address under the mirror's namespace (the local blockstore shows
            # its namespaces below its root directory, so only the tail is compared).
            tail = f"{dst_ns.split('://', 1)[1]}/{relative}"
            assert d.physical_address.endswith(tail), (
                f"{where} {path!r}: copied object at {d.physical_address}, expected it at .../{tail}"
            )
        else:
            # Imported: the entry keeps its full address outside the namespace; the mirror points at it too.
            # A lakeFS on the local blockstore shows a foreign full address below its own root directory
            # ("s3://bucket/key" as "s3:///<root>/bucket/key"): the entry is the same, only its rendering
            # differs, so on such a mirror the scheme and the whole bucket/key tail are compared.
            full_address.add(path)
            scheme, tail = s.physical_address.split("://", 1)
            same = d.physical_address == s.physical_address or (
                mirror.region.blockstore.get("type") == "local"
                and d.physical_address.startswith(f"{scheme}:///")
                and d.physical_address.endswith(f"/{tail}")
            )
            assert same, f"{where} {path!r}: full address {s.physical_address} is {d.physical_address} at the mirror"
    report.full_address_paths |= full_address

    src_listing = dict(_gateway_list(source.s3, repo, ref))
    dst_listing = dict(_gateway_list(mirror.s3, name, ref))
    assert sorted(src_listing) == sorted(src_entries), f"{where}: source gateway lists other keys than its REST API"
    assert dst_listing == src_listing, _diff(f"gateway listing at {where}", src_listing, dst_listing)

    for path in sorted(src_entries):
        key = f"{ref}/{path}"
        src_head = _head(source.s3, repo, key)
        dst_head = _head(mirror.s3, name, key)
        assert dst_head == src_head, f"{where} {path!r}: head_object differs: source {src_head}, mirror {dst_head}"
        report.entries_compared += 1
        checksum = src_entries[path].checksum
        if (path, checksum) in read or (path in full_address and not full_address_readable):
            continue
        read.add((path, checksum))
        src_get, src_digest, size = _get(source.s3, repo, key)
        dst_get, dst_digest, _ = _get(mirror.s3, name, key)
        assert dst_digest == src_digest, f"{where} {path!r}: the mirror's bytes differ from the source's ({size} B)"
        assert dst_get == src_get, f"{where} {path!r}: get_object headers differ: source {src_get}, mirror {dst_get}"
        assert size == src_entries[path].size_bytes, f"{where} {path!r}: read {size} B, stat says otherwise"
        report.objects_read += 1
        report.bytes_read += size


def _relative_address(namespace: str, physical: str) -> str | None:
    """The address of an object relative to ``namespace``, or None for a full address outside it. A lakeFS
    on the local blockstore shows ``local://ns`` objects as ``local:///<root>/ns/...``."""
    if physical.startswith(namespace + "/"):
        return physical[len(namespace) + 1 :]
    scheme, path = namespace.split("://", 1)
    marker = f"/{path.strip('/')}/"
    if scheme == "local" and physical.startswith("local:///") and marker in physical:
        return physical.split(marker, 1)[1]
    return None


def gateway_keys(s3: Any, bucket: str, ref: str) -> dict[str, tuple[str, int, Any]]:
    """``{path: (ETag, Size, LastModified)}`` of ``ref`` through an S3 gateway (paginated)."""
    return dict(_gateway_list(s3, bucket, ref))


def _gateway_list(s3: Any, bucket: str, ref: str) -> Iterator[tuple[str, tuple[str, int, Any]]]:
    prefix = f"{ref}/"
    token: str | None = None
    for _ in range(100_000):
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": LIST_PAGE}
        if token:
            kwargs["ContinuationToken"] = token
        page = s3.list_objects_v2(**kwargs)
        for o in page.get("Contents", []):
            assert o["Key"].startswith(prefix), o["Key"]
            yield o["Key"][len(prefix) :], (o["ETag"], o["Size"], o["LastModified"])
        if not page.get("IsTruncated"):
            return
        token = page["NextContinuationToken"]
    raise AssertionError(f"list_objects_v2 of {bucket}/{prefix} did not end")


_HEADERS = ("ETag", "ContentLength", "ContentType", "Metadata", "LastModified")


def _head(s3: Any, bucket: str, key: str) -> dict[str, Any]:
    response = s3.head_object(Bucket=bucket, Key=key)
    return {h: response.get(h) for h in _HEADERS}


def _get(s3: Any, bucket: str, key: str) -> tuple[dict[str, Any], str, int]:
    """Headers, SHA-256 and length of the bytes ``get_object`` streams."""
    response = s3.get_object(Bucket=bucket, Key=key)
    digest, size = hashlib.sha256(), 0
    body = response["Body"]
    try:
        for chunk in iter(lambda: body.read(_READ_CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
    finally:
        body.close()
    return {h: response.get(h) for h in _HEADERS}, digest.hexdigest(), size


# ---------------------------------------------------------------------------------------------- read-only
def _assert_gateway_refuses_writes(mirror: RegionClients, name: str, branches: dict[str, str]) -> None:
    """put_object and delete_object through the mirror's gateway: 403, and nothing changed."""
    branch = min(branches) if branches else "main"
    probe = f"{branch}/_outside_check/probe.txt"
    status = _refused(lambda: mirror.s3.put_object(Bucket=name, Key=probe, Body=b"must not land"))
    assert status == 403, f"put_object into mirror {name} through the gateway: HTTP {status}, expected 403"
    try:
        mirror.s3.head_object(Bucket=name, Key=probe)
    except botocore.exceptions.ClientError as exc:
        assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 404, exc
    else:
        raise AssertionError(f"a refused put_object left {probe} in mirror {name}")
    if not branches:
        return
    listed = mirror.s3.list_objects_v2(Bucket=name, Prefix=f"{branch}/", MaxKeys=1).get("Contents", [])
    if listed:
        victim = listed[0]["Key"]
        status = _refused(lambda: mirror.s3.delete_object(Bucket=name, Key=victim))
        assert status == 403, f"delete_object from mirror {name} through the gateway: HTTP {status}, expected 403"
        mirror.s3.head_object(Bucket=name, Key=victim)  # still there


def _refused(call: Any) -> int:
    try:
        call()
    except botocore.exceptions.ClientError as exc:
        return int(exc.response["ResponseMetadata"]["HTTPStatusCode"])
    return 200


# ---------------------------------------------------------------------------------------------- messages
def _diff(what: str, source: dict[str, Any], mirror: dict[str, Any]) -> str:
    only_src = sorted(set(source) - set(mirror))
    only_dst = sorted(set(mirror) - set(source))
    changed = {k: (source[k], mirror[k]) for k in sorted(set(source) & set(mirror)) if source[k] != mirror[k]}
    return (
        f"{what} differ: only at the source {only_src[:10]}, only at the mirror {only_dst[:10]}, "
        f"different (source, mirror) {dict(list(changed.items())[:10])}"
    )


def _log_diff(what: str, source: list[Commit], mirror: list[Commit]) -> str:
    for i, (s, d) in enumerate(zip(source, mirror, strict=False)):
        if s != d or s.metadata != d.metadata:
            return f"log of {what} differs at entry {i}: source {s}, mirror {d}"
    return f"log of {what} differs in length: source {len(source)} commits, mirror {len(mirror)}"
