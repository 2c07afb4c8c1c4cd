"""A thin typed client for one lakeFS installation, over the generated ``lakefs-sdk``.

Why not the SDK directly: every call here maps errors into one hierarchy, retries what is worth retrying
(429, 5xx, connection failures) on the package's ``Backoff``, honouring ``Retry-After``, pages through listings
lazily, and returns plain dataclasses. It also counts metadata-file downloads, which is how tests prove an
incremental sync reads no range it had validated before.

``lakefs_sdk`` is imported when a client is built, never at module import (``sdk.import_sdk``, which also defers
the SDK's per-method argument models to each method's first call): it takes up to a second to import, and the
Dagster code location (and every run worker) imports this module before it needs lakeFS.
"""

from __future__ import annotations

import collections
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import urllib3

from ..backoff import Backoff
from ..observe import timed
from .errors import LakeFSConflict, LakeFSError, LakeFSUnavailable, error_for_status
from .models import Commit, Ref, Repository
from .sdk import import_sdk

__all__ = ["LakeFSClient"]

T = TypeVar("T")
_RETRYABLE_TRANSPORT = (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)
#: The longest wait between two tries of one call, also for a longer ``Retry-After``: a call that cannot get
#: through within a few such waits fails, and the caller's own retry (the branch's cooldown) takes over.
_BACKOFF_CAP_S = 5.0


class LakeFSClient:
    """Typed access to one lakeFS API endpoint (``http://host:port``, without ``/api/v1``)."""

    def __init__(
        self,
        endpoint: str,
        access_key_id: str,
        secret_access_key: str,
        *,
        attempts: int = 5,
        backoff_s: float = 0.2,
        timeout_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``attempts`` tries per retried call, the first retry waiting up to ``backoff_s`` (doubling, capped)."""
        lakefs_sdk = import_sdk()
        self.endpoint = endpoint.rstrip("/").removesuffix("/api/v1")
        conf = lakefs_sdk.Configuration(
            host=f"{self.endpoint}/api/v1", username=access_key_id, password=secret_access_key
        )
        # Enough pooled connections for a transfer pool streaming objects through the API.
        conf.connection_pool_maxsize = 64
        # urllib3's default (3 immediate retries of failed connections) minus its own Retry-After handling, which
        # silently re-sent GETs answered 429/503 after sleeping as long as asked (up to 6 hours): those answers
        # come back here, to ``call``'s capped schedule.
        conf.retries = urllib3.Retry(3, respect_retry_after_header=False)
        self._api = lakefs_sdk.ApiClient(conf)
        self._basic_auth = f"{access_key_id}:{secret_access_key}"
        self._backoff = Backoff(base=backoff_s, cap=_BACKOFF_CAP_S, attempts=max(1, attempts), sleep=sleep)
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self.metadata_reads: collections.Counter[str] = collections.Counter()
        self.repositories = lakefs_sdk.RepositoriesApi(self._api)
        self.branches = lakefs_sdk.BranchesApi(self._api)
        self.tags = lakefs_sdk.TagsApi(self._api)
        self.commits = lakefs_sdk.CommitsApi(self._api)
        self.refs = lakefs_sdk.RefsApi(self._api)
        self.objects = lakefs_sdk.ObjectsApi(self._api)
        self.internal = lakefs_sdk.InternalApi(self._api)
        self.experimental = lakefs_sdk.ExperimentalApi(self._api)
        self.auth = lakefs_sdk.AuthApi(self._api)
        self.config = lakefs_sdk.ConfigApi(self._api)

    def __repr__(self) -> str:  # never show credentials
        return f"LakeFSClient({self.endpoint!r})"

    def close(self) -> None:
        self._api.close()

    # ------------------------------------------------------------------ plumbing
    def call(self, what: str, fn: Callable[..., T], *args: Any, retry: bool = True, **kwargs: Any) -> T:
        """Run one SDK call with error mapping and, when ``retry``, bounded retries on transient failures."""
        from lakefs_sdk.exceptions import ApiException

        kwargs.setdefault("_request_timeout", self._timeout_s)
        operation = _operation(fn)

        def attempt() -> T:
            try:
                with timed("lakefs", operation) as request:  # each attempt is a request of its own
                    try:
                        return fn(*args, **kwargs)
                    except ApiException as exc:
                        request.failed = _failed_status(exc.status)
                        raise
            except ApiException as exc:
                raise error_for_status(
                    exc.status or 0, exc.body, endpoint=self.endpoint, what=what, headers=exc.headers
                ) from None
            except _RETRYABLE_TRANSPORT as exc:
                raise self._unreachable(what, exc) from exc

        return self._retried(attempt, retry=retry)

    def _retried(self, attempt: Callable[[], T], *, retry: bool = True) -> T:
        """``attempt()`` again while it raises ``LakeFSUnavailable`` (honouring its ``Retry-After``), within the
        client's bounded schedule; any other error, or the last one, is raised."""
        tries = self._backoff.start()
        while True:
            try:
                return attempt()
            except LakeFSUnavailable as err:
                if not retry or not tries.wait(err.retry_after):
                    raise

    def _unreachable(self, what: str, exc: BaseException) -> LakeFSUnavailable:
        return LakeFSUnavailable(
            f"{what}: lakeFS at {self.endpoint} unreachable: {type(exc).__name__}", endpoint=self.endpoint
        )

    # ------------------------------------------------------------------ health and identity
    def healthy(self) -> bool:
        import lakefs_sdk

        try:
            self.call("health check", lakefs_sdk.HealthCheckApi(self._api).health_check, retry=False)
            return True
        except LakeFSError:
            return False

    def whoami(self) -> str:
        """The user ID these credentials belong to (raises ``LakeFSUnauthorized`` when they are wrong)."""
        return str(self.call("get current user", self.auth.get_current_user, retry=False).user.id)

    def storage_ids(self) -> list[str]:
        """Storage ids this lakeFS accepts for a repository; ``[""]`` for a single blockstore (all of
        open-source lakeFS, whose ``GET /config`` lists no stores)."""
        config = self.call("get lakeFS config", self.config.get_config)
        ids = [str(s.blockstore_id or "") for s in (config.storage_config_list or [])]
        return ids or [""]

    # ------------------------------------------------------------------ repositories
    def get_repository(self, repo: str) -> Repository:
        r = self.call(f"get repository {repo}", self.repositories.get_repository, repo)
        return _repo(r)

    def create_repository(
        self,
        name: str,
        storage_namespace: str,
        *,
        default_branch: str = "main",
        read_only: bool = False,
        bare: bool = False,
        storage_id: str | None = None,
    ) -> Repository:
        import lakefs_sdk

        body = lakefs_sdk.RepositoryCreation(
            name=name,
            storage_namespace=storage_namespace,
            default_branch=default_branch,
            read_only=read_only,
            storage_id=storage_id or None,
        )
        self.call(f"create repository {name}", self.repositories.create_repository, body, bare=bare, retry=False)
        return self.get_repository(name)

    def delete_repository(self, repo: str, *, force: bool = False) -> None:
        self.call(f"delete repository {repo}", self.repositories.delete_repository, repo, force=force)

    def list_repositories(self, *, page_size: int = 1000) -> Iterator[Repository]:
        for item in self._paginate("list repositories", self.repositories.list_repositories, page_size):
            yield _repo(item)

    # ------------------------------------------------------------------ branches and tags
    def list_branches(self, repo: str, *, page_size: int = 1000) -> Iterator[Ref]:
        for item in self._paginate(f"list branches of {repo}", self.branches.list_branches, page_size, repo):
            yield Ref(item.id, item.commit_id)

    def get_branch_head(self, repo: str, branch: str) -> str:
        return str(self.call(f"get branch {repo}/{branch}", self.branches.get_branch, repo, branch).commit_id)

    def create_branch(self, repo: str, name: str, source: str, *, force: bool = False) -> None:
        import lakefs_sdk

        body = lakefs_sdk.BranchCreation(name=name, source=source, force=force)
        self.call(f"create branch {repo}/{name}", self.branches.create_branch, repo, body, retry=False)

    def delete_branch(self, repo: str, name: str, *, force: bool = False) -> None:
        self.call(f"delete branch {repo}/{name}", self.branches.delete_branch, repo, name, force=force)

    def hard_reset_branch(self, repo: str, branch: str, ref: str, *, force: bool = False) -> None:
        self.call(
            f"hard-reset branch {repo}/{branch} to {ref}",
            self.experimental.hard_reset_branch,
            repo,
            branch,
            ref,
            force=force,
        )

    def list_tags(self, repo: str, *, page_size: int = 1000) -> Iterator[Ref]:
        for item in self._paginate(f"list tags of {repo}", self.tags.list_tags, page_size, repo):
            yield Ref(item.id, item.commit_id)

    def get_tag(self, repo: str, tag: str) -> str:
        """The commit ID a tag points at."""
        return str(self.call(f"get tag {repo}/{tag}", self.tags.get_tag, repo, tag).commit_id)

    def create_tag(self, repo: str, tag: str, ref: str, *, force: bool = False) -> None:
        import lakefs_sdk

        body = lakefs_sdk.TagCreation(id=tag, ref=ref, force=force)
        self.call(f"create tag {repo}/{tag}", self.tags.create_tag, repo, body, retry=False)

    def delete_tag(self, repo: str, tag: str, *, force: bool = False) -> None:
        self.call(f"delete tag {repo}/{tag}", self.tags.delete_tag, repo, tag, force=force)

    # ------------------------------------------------------------------ commits
    def get_commit(self, repo: str, commit_id: str) -> Commit:
        return Commit.from_api(self.call(f"get commit {repo}@{commit_id}", self.commits.get_commit, repo, commit_id))

    def log_commits(
        self, repo: str, ref: str, *, page_size: int = 1000, first_parent: bool = False
    ) -> Iterator[Commit]:
        """Commits reachable from ``ref``, newest first, page by page."""
        for item in self._paginate(
            f"log {repo}@{ref}", self.refs.log_commits, page_size, repo, ref, first_parent=first_parent
        ):
            yield Commit.from_api(item)

    def create_commit_record(self, repo: str, commit: Commit, *, force: bool = False) -> bool:
        """Create ``commit`` with its own ID; returns False when the record already existed (409)."""
        import lakefs_sdk

        body = lakefs_sdk.CommitRecordCreation(
            commit_id=commit.id,
            version=commit.version,
            committer=commit.committer,
            message=commit.message,
            metarange_id=commit.metarange_id,
            creation_date=commit.creation_date,
            parents=list(commit.parents),
            # Always sent: the server dereferences it without a nil check.
            metadata=dict(commit.metadata),
            generation=commit.generation,
            force=force,
        )
        try:
            self.call(f"create commit record {repo}@{commit.id}", self.internal.create_commit_record, repo, body)
        except LakeFSConflict:
            return False
        return True

    def commit(
        self,
        repo: str,
        branch: str,
        message: str,
        *,
        metadata: dict[str, str] | None = None,
        force: bool = False,
        allow_empty: bool = False,
    ) -> Commit:
        import lakefs_sdk

        body = lakefs_sdk.CommitCreation(message=message, metadata=metadata or {}, force=force, allow_empty=allow_empty)
        c = self.call(f"commit {repo}/{branch}", self.commits.commit, repo, branch, body, retry=False)
        return Commit.from_api(c)

    def merge(self, repo: str, source: str, destination: str, *, message: str = "") -> str:
        import lakefs_sdk

        body = lakefs_sdk.Merge(message=message or f"Merge {source} into {destination}")
        result = self.call(
            f"merge {source} into {repo}/{destination}",
            self.refs.merge_into_branch,
            repo,
            source,
            destination,
            merge=body,
            retry=False,
        )
        return str(result.reference)

    # ------------------------------------------------------------------ metadata files
    def get_metadata_object(self, repo: str, kind: str, object_id: str) -> bytes:
        """Raw bytes of a range (``kind='range'``) or metarange (``'meta_range'``) file."""
        with self._lock:
            self.metadata_reads[kind] += 1
        what = f"download {kind} {object_id} of {repo}"
        path = f"/repositories/{_q(repo)}/metadata/object/{_q(kind)}/{_q(object_id)}"

        def attempt() -> bytes:
            # Outside the generated SDK: a history's first sync reads two such files per commit, and the SDK's
            # per-call argument validation and response handling cost about as much CPU as the request itself.
            return self._raw("GET", path, {}, operation="get_metadata_object", what=what, preload=True).data

        return self._retried(attempt)

    # ------------------------------------------------------------------ objects
    def upload_object(self, repo: str, branch: str, path: str, content: bytes, *, force: bool = False) -> None:
        """Upload bytes as one object (the generated SDK only uploads from file paths)."""
        body, content_type = urllib3.encode_multipart_formdata({"content": (path.rsplit("/", 1)[-1], content)})
        resp = self._raw(
            "POST",
            f"/repositories/{_q(repo)}/branches/{_q(branch)}/objects",
            {"path": path, "force": str(force).lower()},
            operation="upload_object",
            what=f"upload {repo}/{branch}/{path}",
            body=body,
            content_type=content_type,
        )
        resp.release_conn()

    def delete_object(self, repo: str, branch: str, path: str, *, force: bool = False) -> None:
        self.call(f"delete {repo}/{branch}/{path}", self.objects.delete_object, repo, branch, path, force=force)

    def get_object(self, repo: str, ref: str, path: str) -> bytes:
        return bytes(self.call(f"get {repo}@{ref}/{path}", self.objects.get_object, repo, ref, path))

    def open_object(self, repo: str, ref: str, path: str) -> urllib3.BaseHTTPResponse:
        """A streaming response for the object's bytes; the caller reads it and calls ``release_conn``."""
        return self._raw(
            "GET",
            f"/repositories/{_q(repo)}/refs/{_q(ref)}/objects",
            {"path": path},
            operation="get_object_stream",
            what=f"get {repo}@{ref}/{path}",
        )

    def presigned_addresses(
        self, repo: str, ref: str, *, after: str, amount: int = 1000
    ) -> tuple[list[tuple[str, str, int | None]], bool]:
        """One page of ``ref``'s objects after key ``after``, each as ``(path, presigned URL, expiry epoch
        seconds)`` (the store's own URL where lakeFS cannot presign), and whether more follow. One request
        per page: far cheaper for lakeFS than a request per object (its per-request cost dominates). Without the
        objects' user metadata, which the reads do not need."""
        resp = self._raw(
            "GET",
            f"/repositories/{_q(repo)}/refs/{_q(ref)}/objects/ls",
            {"after": after, "amount": str(amount), "presign": "true", "user_metadata": "false"},
            operation="list_objects_presigned",
            what=f"list presigned objects {repo}@{ref}",
        )
        try:
            page = json.loads(resp.read())
        finally:
            resp.release_conn()
        results = [
            (str(o["path"]), str(o.get("physical_address") or ""), o.get("physical_address_expiry"))
            for o in page.get("results", [])
        ]
        return results, bool(page.get("pagination", {}).get("has_more"))

    def stat_object(self, repo: str, ref: str, path: str) -> Any:
        return self.call(f"stat {repo}@{ref}/{path}", self.objects.stat_object, repo, ref, path)

    def list_objects(self, repo: str, ref: str, *, prefix: str = "", page_size: int = 1000) -> Iterator[Any]:
        yield from self._paginate(
            f"list objects {repo}@{ref}", self.objects.list_objects, page_size, repo, ref, prefix=prefix
        )

    # ------------------------------------------------------------------ helpers
    def _raw(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        *,
        operation: str,
        what: str,
        body: bytes | None = None,
        content_type: str | None = None,
        preload: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """A request outside the generated SDK (streaming bodies, unless ``preload``: then the body is read with
        the answer, and a connection broken while it arrives is retried by the pool as the SDK's requests are),
        with the same error mapping; ``operation`` names it for the request timing hooks (``observe.timed``: until
        the answer's headers, or its whole body when preloaded)."""
        headers = urllib3.make_headers(basic_auth=self._basic_auth)
        if content_type:
            headers["Content-Type"] = content_type
        url = f"{self.endpoint}/api/v1{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        try:
            with timed("lakefs", operation) as request:
                resp = self._api.rest_client.pool_manager.request(
                    method, url, body=body, headers=headers, timeout=self._timeout_s, preload_content=preload
                )
                request.failed = _failed_status(resp.status)
        except _RETRYABLE_TRANSPORT as exc:
            raise self._unreachable(what, exc) from exc
        if resp.status >= 300:
            data = resp.data  # preloaded or not
            resp.release_conn()
            raise error_for_status(resp.status, data, endpoint=self.endpoint, what=what, headers=resp.headers)
        return resp

    def _paginate(self, what: str, fn: Callable[..., Any], page_size: int, *args: Any, **kwargs: Any) -> Iterator[Any]:
        after = ""
        for _ in range(10_000_000):
            page = self.call(what, fn, *args, after=after, amount=page_size, **kwargs)
            yield from page.results
            if not page.pagination.has_more:
                return
            after = page.pagination.next_offset


def _failed_status(status: int | None) -> bool:
    """Whether an answer means the request failed (none, 429, 5xx), as opposed to an answer such as a 404."""
    return not status or status == 429 or status >= 500


def _operation(fn: Callable[..., Any]) -> str:
    """The request's operation class for the timing hooks: the SDK method's name (a bounded set), never its
    arguments."""
    name = getattr(fn, "__name__", "")
    return name if name.isidentifier() and name != "<lambda>" else "other"


def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _repo(r: Any) -> Repository:
    return Repository(
        id=r.id,
        storage_namespace=r.storage_namespace,
        default_branch=r.default_branch,
        read_only=bool(r.read_only),
        storage_id=r.storage_id or "",
        creation_date=int(r.creation_date or 0),
    )
