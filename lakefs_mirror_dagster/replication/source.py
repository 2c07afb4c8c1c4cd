"""Where the engine reads a source repository's bytes from.

Two ways, one interface: through the source region's lakeFS API (needs no storage credentials for the
source, works across any pair of stores), or directly from the source's object store when the config gives
credentials for it (faster, and server-side copies when both sides share an S3 endpoint).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from ..lakefs import LakeFSClient, LakeFSGone, LakeFSNotFound
from ..storage import Blockstore, ObjectInfo, ObjectNotFound, ObjectStat, ReadableStream, StorageError
from ..storage.uri import join_namespace
from .validation import metadata_uri

__all__ = ["ApiObjectReader", "RepositorySource", "SourceReader"]

_LAKEFS_SCHEME = "lakefs"


class ApiObjectReader(Blockstore):
    """A read-only ``Blockstore`` over lakeFS's object API: ``lakefs://<repo>/<commit>/<path>`` URIs.

    It lets the transfer pool stream objects from a source it has no storage credentials for.
    """

    schemes = frozenset({_LAKEFS_SCHEME})

    def __init__(self, client: LakeFSClient) -> None:
        self._client = client

    @staticmethod
    def uri(repo: str, commit_id: str, path: str) -> str:
        return f"{_LAKEFS_SCHEME}://{repo}/{commit_id}/{path}"

    @staticmethod
    def _split(uri: str) -> tuple[str, str, str]:
        rest = uri.removeprefix(f"{_LAKEFS_SCHEME}://")
        repo, commit_id, path = rest.split("/", 2)
        return repo, commit_id, path

    def describe(self) -> str:
        return f"lakeFS API {self._client.endpoint}"

    def stat(self, uri: str) -> ObjectStat | None:
        repo, ref, path = self._split(uri)
        try:
            st = self._client.stat_object(repo, ref, path)
        except LakeFSNotFound:
            return None
        return ObjectStat(size=int(st.size_bytes or 0), etag=st.checksum)

    def open_read(self, uri: str) -> BinaryIO:
        repo, ref, path = self._split(uri)
        try:
            resp = self._client.open_object(repo, ref, path)
        except (LakeFSNotFound, LakeFSGone) as exc:
            raise ObjectNotFound(f"{uri}: {exc}", uri=uri) from exc
        return cast(BinaryIO, _ResponseStream(resp))

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        raise StorageError("the lakeFS API source is read-only", uri=uri)

    def write_bytes(self, uri: str, data: bytes) -> ObjectStat:
        raise StorageError("the lakeFS API source is read-only", uri=uri)

    def delete(self, uri: str) -> None:
        raise StorageError("the lakeFS API source is read-only", uri=uri)

    def list_prefix(self, uri_prefix: str) -> Iterator[ObjectInfo]:
        raise StorageError("listing is not supported through the lakeFS API source", uri=uri_prefix)


class _ResponseStream(io.RawIOBase):
    """A urllib3 streaming response as a closeable binary file."""

    def __init__(self, resp: Any) -> None:
        self._resp = resp

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1, /) -> bytes:
        return bytes(self._resp.read(None if size is None or size < 0 else size))

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._resp.release_conn()
        super().close()


class SourceReader:
    """Reads one source repository's range files and objects: from its store when given, else through its
    lakeFS API. It is all a transfer needs, so a Spark task builds one for itself from plain settings."""

    def __init__(
        self,
        repository: str,
        storage_namespace: str,
        *,
        store: Blockstore | None = None,
        client: LakeFSClient | None = None,
    ) -> None:
        if store is None and client is None:
            raise ValueError("a source reader needs the source's store or its lakeFS client")
        self.repository = repository
        self.storage_namespace = storage_namespace
        self.store = store
        self._api_client = client
        self._api_reader = ApiObjectReader(client) if client is not None else None

    @property
    def mode(self) -> str:
        return "store" if self.store is not None else "api"

    def read_metadata(self, kind: str, file_id: str) -> bytes:
        """Bytes of a range (``kind='range'``) or metarange (``'meta_range'``) file."""
        if self.store is not None:
            return self.store.read_bytes(metadata_uri(self.storage_namespace, file_id))
        assert self._api_client is not None
        return self._api_client.get_metadata_object(self.repository, kind, file_id)

    def namespace_uri(self, address: str) -> str:
        """Where the source's store keeps a relative-address object; a mirror keeps its copy at the same
        ``address`` under its own namespace."""
        return join_namespace(self.storage_namespace, address)

    def object_location(self, commit_id: str, key: str, address: str) -> tuple[Blockstore, str]:
        """Store and URI to read one relative-address object from."""
        if self.store is not None:
            return self.store, self.namespace_uri(address)
        assert self._api_reader is not None
        return self._api_reader, ApiObjectReader.uri(self.repository, commit_id, key)


class RepositorySource(SourceReader):
    """One source repository as the engine sees it: a ``SourceReader`` plus the lakeFS client it plans with."""

    def __init__(
        self,
        client: LakeFSClient,
        repository: str,
        storage_namespace: str,
        *,
        store: Blockstore | None = None,
    ) -> None:
        super().__init__(repository, storage_namespace, store=store, client=client)
        self.client = client
