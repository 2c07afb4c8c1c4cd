"""What users run against lakeFS, as they run it: boto3 through the S3 gateway, and the REST API.

Nothing here uses the project's own code (``LakeFSClient``, upload helpers, blockstores): the writes the mirror
is tested on are made with the clients users really use.

- ``gateway_client(region)``: a boto3 S3 client for a region's lakeFS S3 gateway (same host:port as its API,
  path-style, bucket = repository, key = ``<ref>/<path>``).
- ``LakeFSRest``: the lakeFS REST API (``/api/v1``) through the generated ``lakefs_sdk`` package: repositories,
  commits with metadata, merges (with a conflict strategy), revert, cherry-pick, hard reset, branches, tags
  and imports.
"""

from __future__ import annotations

import io
import random
import time
from collections.abc import Iterator, Mapping
from typing import Any

import lakefs_sdk
from boto3.s3.transfer import TransferConfig
from lakefs_mirror_devenv import LakeFSRegion, MinioInstance

__all__ = ["LakeFSRest", "MiB", "blob", "gateway_client", "minio_client", "multipart_upload", "put"]

MiB = 1024 * 1024


def blob(name: str, size: int) -> bytes:
    """Deterministic bytes for ``name``, different in every part (so a part swapped or repeated shows)."""
    return random.Random(name).randbytes(size)


def gateway_client(region: LakeFSRegion) -> Any:
    """boto3 against ``region``'s lakeFS S3 gateway, as a user configures it (path-style addressing)."""
    return region.s3_gateway_client()


def minio_client(minio: MinioInstance) -> Any:
    """boto3 straight against a MinIO server (for data lakeFS imports from outside its namespace)."""
    return minio.s3_client()


def put(
    s3: Any,
    repo: str,
    branch: str,
    path: str,
    body: bytes,
    *,
    content_type: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """One single-part ``put_object`` through the gateway."""
    extra: dict[str, Any] = {}
    if content_type is not None:
        extra["ContentType"] = content_type
    if metadata:
        extra["Metadata"] = dict(metadata)
    s3.put_object(Bucket=repo, Key=f"{branch}/{path}", Body=body, **extra)


def multipart_upload(
    s3: Any,
    repo: str,
    branch: str,
    path: str,
    body: bytes,
    *,
    part_size: int,
    content_type: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """``upload_fileobj`` with a 5 MiB multipart threshold and ``part_size`` parts, as users tune it."""
    config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=part_size, max_concurrency=2)
    extra: dict[str, Any] = {}
    if content_type is not None:
        extra["ContentType"] = content_type
    if metadata:
        extra["Metadata"] = dict(metadata)
    s3.upload_fileobj(io.BytesIO(body), repo, f"{branch}/{path}", ExtraArgs=extra or None, Config=config)


class LakeFSRest:
    """The lakeFS REST API of one region through ``lakefs_sdk`` (the generated client users install)."""

    def __init__(self, region: LakeFSRegion) -> None:
        self.region = region
        conf = lakefs_sdk.Configuration(
            host=region.api_url, username=region.access_key_id, password=region.secret_access_key
        )
        self.api = lakefs_sdk.ApiClient(conf)
        self.repositories = lakefs_sdk.RepositoriesApi(self.api)
        self.branches = lakefs_sdk.BranchesApi(self.api)
        self.tags = lakefs_sdk.TagsApi(self.api)
        self.commits = lakefs_sdk.CommitsApi(self.api)
        self.refs = lakefs_sdk.RefsApi(self.api)
        self.objects = lakefs_sdk.ObjectsApi(self.api)
        self.experimental = lakefs_sdk.ExperimentalApi(self.api)
        self.imports = lakefs_sdk.ImportApi(self.api)

    def close(self) -> None:
        self.api.close()

    # ------------------------------------------------------------------ repositories, branches, tags
    def create_repository(self, name: str) -> str:
        body = lakefs_sdk.RepositoryCreation(
            name=name, storage_namespace=self.region.namespace_for(name), default_branch="main"
        )
        self.repositories.create_repository(body)
        return name

    def repository(self, name: str) -> Any:
        return self.repositories.get_repository(name)

    def create_branch(self, repo: str, name: str, source: str) -> str:
        self.branches.create_branch(repo, lakefs_sdk.BranchCreation(name=name, source=source))
        return self.head(repo, name)

    def delete_branch(self, repo: str, name: str) -> None:
        self.branches.delete_branch(repo, name)

    def head(self, repo: str, branch: str) -> str:
        return str(self.branches.get_branch(repo, branch).commit_id)

    def hard_reset(self, repo: str, branch: str, ref: str) -> None:
        """``PUT /repositories/{repo}/branches/{branch}/hard_reset?ref=...`` (lakeFS 1.x)."""
        self.experimental.hard_reset_branch(repo, branch, ref)

    def create_tag(self, repo: str, tag: str, ref: str) -> str:
        return str(self.tags.create_tag(repo, lakefs_sdk.TagCreation(id=tag, ref=ref)).commit_id)

    def delete_tag(self, repo: str, tag: str) -> None:
        self.tags.delete_tag(repo, tag)

    def move_tag(self, repo: str, tag: str, ref: str) -> str:
        """Tags are immutable in lakeFS: users move one by deleting and creating it again."""
        self.delete_tag(repo, tag)
        return self.create_tag(repo, tag, ref)

    def branch_heads(self, repo: str) -> dict[str, str]:
        return {r.id: r.commit_id for r in _pages(self.branches.list_branches, repo)}

    def tag_targets(self, repo: str) -> dict[str, str]:
        return {r.id: r.commit_id for r in _pages(self.tags.list_tags, repo)}

    # ------------------------------------------------------------------ history
    def commit(self, repo: str, branch: str, message: str, metadata: Mapping[str, str] | None = None) -> str:
        body = lakefs_sdk.CommitCreation(message=message, metadata=dict(metadata or {}))
        return str(self.commits.commit(repo, branch, body).id)

    def merge(
        self,
        repo: str,
        source: str,
        destination: str,
        *,
        message: str = "",
        strategy: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> str:
        body = lakefs_sdk.Merge(
            message=message or f"merge {source} into {destination}", strategy=strategy, metadata=dict(metadata or {})
        )
        return str(self.refs.merge_into_branch(repo, source, destination, merge=body).reference)

    def revert(self, repo: str, branch: str, ref: str, *, parent_number: int = 0) -> str:
        self.branches.revert_branch(repo, branch, lakefs_sdk.RevertCreation(ref=ref, parent_number=parent_number))
        return self.head(repo, branch)

    def cherry_pick(self, repo: str, branch: str, ref: str) -> str:
        return str(self.branches.cherry_pick(repo, branch, lakefs_sdk.CherryPickCreation(ref=ref)).id)

    def uncommitted(self, repo: str, branch: str) -> list[str]:
        """Paths with uncommitted changes on ``branch`` (first page)."""
        return [d.path for d in self.branches.diff_branch(repo, branch, amount=20).results]

    def log(self, repo: str, ref: str) -> list[Any]:
        return list(_pages(self.refs.log_commits, repo, ref))

    # ------------------------------------------------------------------ objects
    def list_objects(self, repo: str, ref: str) -> list[Any]:
        return list(_pages(self.objects.list_objects, repo, ref, user_metadata=True))

    def import_prefix(self, repo: str, branch: str, source_prefix: str, destination: str, message: str) -> str:
        """lakeFS's import (``POST .../branches/{branch}/import``), polled until done (bounded: 60 s)."""
        body = lakefs_sdk.ImportCreation(
            paths=[lakefs_sdk.ImportLocation(type="common_prefix", path=source_prefix, destination=destination)],
            commit=lakefs_sdk.CommitCreation(message=message, metadata={"source": source_prefix}),
        )
        task = self.imports.import_start(repo, branch, body)
        deadline = time.monotonic() + 60
        for _ in range(600):
            status = self.imports.import_status(repo, branch, task.id)
            if status.completed:
                return str(status.commit.id)
            assert not status.error, status.error
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        raise AssertionError(f"import of {source_prefix} into {repo}/{branch} did not complete in 60 s")


def _pages(fn: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
    """Every result of a paginated lakeFS listing (small pages, so pagination itself is exercised)."""
    after = ""
    for _ in range(100_000):
        page = fn(*args, after=after, amount=100, **kwargs)
        yield from page.results
        if not page.pagination.has_more:
            return
        after = page.pagination.next_offset
    raise AssertionError("listing did not end")
