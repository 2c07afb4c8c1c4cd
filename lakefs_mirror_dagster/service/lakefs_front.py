"""``lakefs_front``: the service also fronts its region's lakeFS, so one address serves both.

An ASGI middleware: a request under ``/service/replication/`` or to one of the app's own routes (``/_health``)
goes to the app, with its own authentication, unless it carries an AWS signature (then it is for the S3
gateway, as lakeFS itself tells them apart). Every other request passes through to lakeFS unchanged in method,
raw path, query string, headers (``Host`` and ``Authorization`` too: the S3 gateway verifies SigV4 against the
``Host`` it receives) and body, and the answer comes back the same way. Bodies stream in both directions with
the servers' flow control, so an object of any size costs a few chunks of memory. Only the hop-by-hop headers
of RFC 9110 section 7.6.1 are dropped. Nothing here logs headers or query strings (they carry credentials and
presigned signatures).
"""

from __future__ import annotations

import http.cookiejar
import logging
import secrets
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["REPLICATION_ROOT", "LakeFSFront"]

log = logging.getLogger(__name__)

#: Everything under it belongs to the service (an unknown path there is the service's 404, never lakeFS's).
REPLICATION_ROOT = "/service/replication"
#: Never forwarded in either direction (RFC 9110 7.6.1); ``expect`` is answered by our own server, and
#: ``date``/``server`` by it too (uvicorn writes its own on every answer).
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_NOT_FORWARDED = _HOP_BY_HOP | {"expect"}
_NOT_RETURNED = _HOP_BY_HOP | {"date", "server"}
_CONNECT_TIMEOUT_S = 10.0


def _passed_headers(raw: Iterable[tuple[bytes, bytes]], dropped: frozenset[str]) -> list[tuple[bytes, bytes]]:
    """``raw`` without ``dropped`` and without the headers a ``Connection`` header names (hop-by-hop too)."""
    pairs = [(name.lower(), value) for name, value in raw]
    named = {
        token.strip().lower()
        for name, value in pairs
        if name == b"connection"
        for token in value.decode("latin-1").split(",")
    }
    return [(n, v) for n, v in pairs if n.decode("latin-1") not in dropped and n.decode("latin-1") not in named]


class LakeFSFront:
    """ASGI middleware: the app's own paths to ``app``, the rest to the lakeFS at ``endpoint``."""

    def __init__(self, app: ASGIApp, *, endpoint: str, timeout_s: float, own_paths: Iterable[str]) -> None:
        import httpx

        self.app = app
        self.endpoint = endpoint.rstrip("/")
        self.own_paths = frozenset(own_paths)
        # One pooled client for all requests. It keeps no cookies (they are the callers', not ours), reads no
        # proxy settings from the environment (lakeFS is this region's own endpoint) and follows no redirects.
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, _CONNECT_TIMEOUT_S)),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=32),
            cookies=http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[])),
            follow_redirects=False,
            trust_env=False,
        )
        self.timeout_s = timeout_s
        # RFC 9110 7.6.3: a proxy adds itself to ``Via``. Ours names this process, so a request that comes back
        # (regional_endpoint pointing at this server) is refused instead of going round until the pool is full.
        self.via = f"1.1 lakefs-mirror-{secrets.token_hex(6)}".encode()

    def is_own(self, path: str) -> bool:
        """Whether the app answers ``path`` (the decoded path, as the app's router matches it)."""
        return path in self.own_paths or path == REPLICATION_ROOT or path.startswith(REPLICATION_ROOT + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._closing_on_shutdown(receive), send)
        elif scope["type"] != "http" or (self.is_own(scope["path"]) and not _aws_signed(scope)):
            await self.app(scope, receive, send)
        else:
            await self._forward(scope, receive, send)

    def _closing_on_shutdown(self, receive: Receive) -> Receive:
        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                await self.client.aclose()
            return message

        return wrapped

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        import httpx
        from starlette.requests import ClientDisconnect
        from starlette.responses import JSONResponse, StreamingResponse

        headers = _passed_headers(scope["headers"], _NOT_FORWARDED)
        if any(name == b"via" and self.via in value for name, value in headers):
            message = f"regional_endpoint {self.endpoint} leads back to this server, not to lakeFS"
            log.error("%s %s -> 508: %s", scope["method"], scope["path"], message)
            await JSONResponse({"message": message}, status_code=508)(scope, receive, send)
            return
        headers.append((b"via", self.via))
        has_body = any(name in (b"content-length", b"transfer-encoding") for name, _ in scope["headers"])
        target = scope.get("raw_path") or scope["path"].encode()
        if scope["query_string"]:
            target += b"?" + scope["query_string"]
        # A request of our own making carries only the caller's headers (``build_request`` would add the client's
        # defaults); its URL names the server, and the wire gets ``target`` exactly as sent, not normalized.
        request = httpx.Request(
            scope["method"],
            self.endpoint,
            headers=headers,
            content=_body(receive) if has_body else None,
            extensions={"target": target},
        )
        try:
            upstream = await self.client.send(request, stream=True)
        except ClientDisconnect:
            return  # the caller left while sending its body; lakeFS got an aborted request
        except httpx.HTTPError as exc:
            status, message = _failure(exc, self.endpoint, self.timeout_s)
            log.warning("%s %s -> %s: %s", scope["method"], scope["path"], status, message)
            await JSONResponse({"message": message}, status_code=status)(scope, receive, send)
            return
        try:
            response = StreamingResponse(upstream.aiter_raw(), status_code=upstream.status_code)
            response.raw_headers = _passed_headers(upstream.headers.raw, _NOT_RETURNED)
            await response(scope, receive, send)
        except httpx.HTTPError as exc:  # the answer had started: the caller sees a cut connection
            log.warning("%s %s: lakeFS's answer broke off: %s", scope["method"], scope["path"], exc)
        finally:
            await upstream.aclose()


def _aws_signed(scope: Scope) -> bool:
    """Whether the request is for lakeFS's S3 gateway, by lakeFS's own rule (``sig.IsAWSSignedRequest``): an
    AWS signature in a header or the query. So ``/service/replication/...`` in a path-style S3 request (the
    repository ``service``, its branch ``replication``) still reaches lakeFS, which checks the signature; the
    replication API takes only HTTP Basic, so no request of it is signed this way."""
    from urllib.parse import parse_qs

    for name, value in scope["headers"]:
        if name.lower() == b"x-amz-signature" and value:
            return True
        if name.lower() == b"authorization" and value.startswith((b"AWS4", b"AWS ")):
            return True
    query = parse_qs(scope["query_string"].decode("latin-1"))
    return bool(query.get("AWSAccessKeyId") or query.get("X-Amz-Credential"))


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    """The caller's request body, chunk by chunk as the server receives it."""
    from starlette.requests import ClientDisconnect

    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if message.get("body"):
            yield message["body"]
        if not message.get("more_body", False):
            return


def _failure(exc: httpx.HTTPError, endpoint: str, timeout_s: float) -> tuple[int, str]:
    """The status and message for a request lakeFS did not answer."""
    import httpx

    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return 502, f"lakeFS at {endpoint} is unreachable: {exc or type(exc).__name__}"
    if isinstance(exc, httpx.PoolTimeout):
        return 503, f"too many requests in flight to lakeFS at {endpoint}; retry later"
    if isinstance(exc, httpx.TimeoutException):
        return 504, f"lakeFS at {endpoint} did not answer within {timeout_s:g}s"
    return 502, f"lakeFS at {endpoint} gave no valid answer: {exc or type(exc).__name__}"
