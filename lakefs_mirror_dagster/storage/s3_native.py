"""The S3 store's obstore requests (``native``): object GET, PUT (single and multipart) and HEAD.

Credentials come from the boto3 session's provider chain on every refresh (obstore's ``Boto3CredentialProvider``),
so profiles, session and refreshed credentials keep working. Addressing, SSE, timeouts and retries come from the
store's settings. obstore sends no Content-MD5, but it signs every body, each part of a multipart upload too (the
SigV4 payload hash), and the store refuses a body that does not match it, as it would a wrong Content-MD5.
Listings, server-side copies across buckets (obstore copies within one bucket only) and bucket calls stay on boto3.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .native import NativeRequests

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig, S3Config

__all__ = ["NativeS3Requests"]


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
        self._client_options: ClientConfig = {
            "allow_http": True,
            "allow_invalid_certificates": not verify_tls,
            "connect_timeout": timedelta(seconds=connect_timeout),
            # object_store's timeout covers a whole request, body included: a slow big GET needs room
            "timeout": timedelta(seconds=max(read_timeout, 3600.0)),
        }
        self._retry: RetryConfig = {"max_retries": max_attempts - 1, "retry_timeout": timedelta(seconds=120)}

    def _new_store(self, bucket: str) -> Any:
        from obstore.store import S3Store

        return S3Store(
            bucket,
            config=self._config,
            client_options=self._client_options,
            retry_config=self._retry,
            credential_provider=self._provider,
        )
