"""The S3 store's obstore requests (``native``): object GET, PUT (single and multipart), HEAD and directory listings.

Credentials come from the boto3 session's provider chain on every refresh, so profiles and refreshed credentials
keep working. A single PUT goes ``UNSIGNED-PAYLOAD`` (no second hash of the body): the store's ETag, the MD5 of
what it stored, is compared with lakeFS's by ``transfer``, which deletes the object when they differ; multipart
parts and SSE writes stay signed. Listings are parsed in Rust (botocore's XML cost as much CPU as the copies it
checked); non-directory prefixes, cross-bucket copies and bucket calls stay on boto3.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from .native import ErrorResponse, NativeRequests, native_error
from .plain_http import HttpBody, HttpConnections, HttpStatusError
from .streams import strip_etag

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig, S3Config

__all__ = ["STREAMED_MIN_BYTES", "NativeS3Requests", "UnlistableKeyError"]

#: Smallest object whose single PUT, and whose GET where its size is known, is streamed (module docstring):
#: below it, obstore's requests cost no more CPU than a presigned one through ``http.client``, and buffers are small.
STREAMED_MIN_BYTES = 8 * 1024 * 1024
#: How long a presigned URL is valid: the request must start within it (the body may take longer).
_URL_VALID = timedelta(hours=1)

#: Prefixes obstore lists exactly as S3 would: empty, or whole directories of plain characters (object_store
#: matches prefixes by path segment and would percent-encode other characters). ``,`` and ``_`` are plain: lakeFS
#: names its uploads ``data/<partition>/<id>,<token>`` with ``_`` in the token, and a validation listing starts
#: just before such a name.
_PLAIN_DIRECTORY = re.compile(r"(?:[A-Za-z0-9._,=+-]+/)*")
#: A key obstore takes as a listing's offset (``StartAfter``) unchanged: plain segments, the last one may be empty.
_PLAIN_KEY = re.compile(r"(?:[A-Za-z0-9._,=+-]+/)*[A-Za-z0-9._,=+-]*")


def _plain(text: str, pattern: re.Pattern[str]) -> bool:
    return pattern.fullmatch(text) is not None and all(part not in (".", "..") for part in text.split("/"))


class UnlistableKeyError(ValueError):
    """A listed key object_store cannot represent (S3 allows empty path segments; object_store does not)."""


class NativeS3Requests(NativeRequests):
    """obstore S3 stores, one per bucket, configured like the boto3 client."""

    def __init__(
        self,
        session: Any,
        *,
        endpoint: str | None,
        region: str | None,
        force_path_style: bool,
        connect_timeout: float,
        read_timeout: float,
        verify_tls: bool,
        max_attempts: int,
        put_headers: Mapping[str, str],
    ) -> None:
        from obstore.auth.boto3 import Boto3CredentialProvider

        super().__init__()

        self._provider = Boto3CredentialProvider(session)
        self._config: S3Config = {"region": region or "us-east-1"}
        if endpoint:
            self._config["endpoint"] = endpoint
        self._config["virtual_hosted_style_request"] = not force_path_style
        if "x-amz-server-side-encryption" in put_headers:
            self._config["server_side_encryption"] = put_headers["x-amz-server-side-encryption"]
        if "x-amz-server-side-encryption-aws-kms-key-id" in put_headers:
            self._config["sse_kms_key_id"] = put_headers["x-amz-server-side-encryption-aws-kms-key-id"]
        #: Single PUTs go unsigned where the store's ETag is the MD5 of what it stored (no SSE asked for: S3's ETag
        #: of an SSE-KMS object, and MinIO's of any encrypted one, is not), which is compared with the MD5 of the
        #: bytes sent; multipart parts stay signed (module docstring).
        self.unsigned_puts = "x-amz-server-side-encryption" not in put_headers
        self._config["unsigned_payload"] = self.unsigned_puts
        self._client_options: ClientConfig = {
            "allow_http": True,
            "allow_invalid_certificates": not verify_tls,
            "connect_timeout": timedelta(seconds=connect_timeout),
            # object_store's timeout covers a whole request, body included: a slow big GET needs room
            "timeout": timedelta(seconds=max(read_timeout, 3600.0)),
        }
        self._retry: RetryConfig = {"max_retries": max_attempts - 1, "retry_timeout": timedelta(seconds=120)}
        self._http = HttpConnections(
            connect_timeout_s=connect_timeout, read_timeout_s=read_timeout, verify_tls=verify_tls
        )

    def _new_store(self, bucket: str, *, for_parts: bool = False) -> Any:
        from obstore.store import S3Store

        return S3Store(
            bucket,
            config={**self._config, "unsigned_payload": False} if for_parts else self._config,
            client_options=self._client_options,
            retry_config=self._retry,
            credential_provider=self._provider,
        )

    def _presign(self, bucket: str, method: Literal["GET", "PUT"], key: str) -> str:
        """A URL obstore signs for one ``method`` request on ``key`` (``_URL_VALID``), for ``plain_http``."""
        import obstore

        try:
            return str(obstore.sign(self._store(bucket), method, key, _URL_VALID))
        except Exception as exc:
            raise native_error(exc) from exc

    def get_stream(self, bucket: str, key: str) -> HttpBody:
        """A GET through a URL obstore presigns, its body read straight from the socket into the reader's buffer:
        half the CPU of obstore's chunks for a large object (``STREAMED_MIN_BYTES``)."""
        url = self._presign(bucket, "GET", key)
        try:
            return self._http.get(url)
        except HttpStatusError as exc:
            raise ErrorResponse.from_body(exc.status, exc.body) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise ConnectionError(f"GET {type(exc).__name__}: {str(exc)[:200]}") from exc

    def put_stream(self, bucket: str, key: str, pieces: Iterable[Any], size: int) -> str | None:
        """One PUT of ``size`` bytes sent as ``pieces`` arrive, through a URL obstore presigns (``unsigned_puts``
        stores only); returns the stored object's ETag. An error raised by ``pieces`` (the source failed, a size
        check refused it) is raised as it is, and the store keeps nothing: the request never completed."""
        if not self.unsigned_puts:
            raise ValueError("a streamed PUT is unsigned: not for a store that asks for server-side encryption")
        url = self._presign(bucket, "PUT", key)
        try:
            answer = self._http.put(url, pieces, size)
        except (OSError, http.client.HTTPException) as exc:
            raise ConnectionError(f"PUT {type(exc).__name__}: {str(exc)[:200]}") from exc
        if answer.status != 200:
            raise ErrorResponse.from_body(answer.status, answer.body)
        return strip_etag(answer.headers.get("etag"))

    @staticmethod
    def lists_exactly(prefix: str, *, after: str | None = None) -> bool:
        """Whether ``list`` answers for ``prefix`` (and ``after``) exactly what S3's ListObjectsV2 would."""
        return _plain(prefix, _PLAIN_DIRECTORY) and (after is None or _plain(after, _PLAIN_KEY))

    def list(self, bucket: str, prefix: str, *, after: str | None = None) -> Iterator[tuple[str, int, str]]:
        """``(key, size, etag)`` of every object under ``prefix`` (``lists_exactly``) after key ``after``, in
        key order, a thousand keys a request."""
        import obstore

        try:
            for chunk in obstore.list(self._store(bucket), prefix or None, offset=after, chunk_size=1000):
                for meta in chunk:
                    yield meta["path"], int(meta["size"]), meta.get("e_tag") or ""
        except obstore.exceptions.InvalidPathError as exc:
            raise UnlistableKeyError(str(exc).splitlines()[0][:300]) from exc
        except Exception as exc:
            raise native_error(exc) from exc
