"""GETs and PUTs of ready-made (presigned) URLs on a small keep-alive pool of ``http.client`` connections.

A presigned request needs no signing, no redirects and no retries of its own (the transfer pool retries
objects). GETs (lakeFS's presigned reads) skip urllib3's per-request Python work (figures: benchmarks/README.md,
"The presigned GETs' connection pool") and read bodies straight into the caller's buffer; PUTs (``s3_native``'s
streamed single PUTs) send the body piece by piece as the source delivers it, so GET and PUT overlap.
"""

from __future__ import annotations

import http.client
import io
import os
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .concurrency import AUTO_CAP

__all__ = ["HttpAnswer", "HttpBody", "HttpConnections", "HttpStatusError"]

#: Errors of a connection the server closed while it sat idle in the pool: a GET is sent once more on a new one.
_STALE = (http.client.RemoteDisconnected, http.client.BadStatusLine, ConnectionResetError, BrokenPipeError)
#: Bytes of an answer's body read whole (an error's, a PUT's); a longer one closes its connection instead.
_SMALL_BODY_LIMIT = 64 * 1024

_Key = tuple[str, str]


class HttpStatusError(Exception):
    """A GET answered something other than 200; ``body`` is its body (empty when over 64 KiB)."""

    def __init__(self, status: int, body: bytes = b"") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class HttpAnswer:
    """A PUT's answer: status, headers (lower-case names) and body (up to 64 KiB: S3 error documents are small)."""

    status: int
    headers: dict[str, str]
    body: bytes


class HttpConnections:
    """Keep-alive connections by scheme and host, each used by one request at a time; at most ``max_idle`` per
    host are kept between requests (by default as many as a pool's copies in flight can be, so that no copy opens
    a connection, a round trip more over a link, that the one before it closed). ``connect_timeout_s`` bounds a
    connection's set-up, ``read_timeout_s`` each wait for bytes after it. ``verify_tls=False`` accepts any
    certificate (a store's ``verify_tls`` setting)."""

    def __init__(
        self, *, connect_timeout_s: float, read_timeout_s: float, verify_tls: bool = True, max_idle: int = AUTO_CAP
    ) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._verify_tls = verify_tls
        self._max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: dict[_Key, list[http.client.HTTPConnection]] = {}
        self._ssl: ssl.SSLContext | None = None

    def get(self, url: str) -> HttpBody:
        """The body of a 200 answer to GET ``url``. Raises HttpStatusError for any other answer, and OSError or
        ``http.client.HTTPException`` when there was none."""
        key, target = _split(url)
        conn, reused = self._take(key)
        try:
            conn.putrequest("GET", target, skip_accept_encoding=True)
            resp = self._answer(conn)
        except _STALE:
            conn.close()
            if not reused:
                raise
            conn = self._new(key)
            try:
                conn.putrequest("GET", target, skip_accept_encoding=True)
                resp = self._answer(conn)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        if resp.status != 200:
            raise HttpStatusError(resp.status, self._finish(key, conn, resp))
        return HttpBody(resp, lambda: self._give_back(key, conn), conn.close)

    def put(self, url: str, pieces: Iterable[Any], size: int, headers: dict[str, str] | None = None) -> HttpAnswer:
        """PUT ``size`` bytes, sent as ``pieces`` (buffers) arrive. An error raised by ``pieces`` closes the
        connection before the body is complete, so the server stores nothing, and is raised as it is."""
        key, target = _split(url)
        conn, _ = self._take(key)
        try:
            conn.putrequest("PUT", target, skip_accept_encoding=True)
            conn.putheader("Content-Length", str(size))
            for name, value in (headers or {}).items():
                conn.putheader(name, value)
            self._connected(conn)
            conn.endheaders()
            for piece in pieces:
                conn.send(piece)
            resp = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        body = self._finish(key, conn, resp)
        return HttpAnswer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, body)

    def close(self) -> None:
        """Close the idle connections (those in use close as their bodies do)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def _connected(self, conn: http.client.HTTPConnection) -> None:
        """Connect ``conn`` if it is not (bounded by the connect timeout it was made with), then give it the read
        timeout."""
        if conn.sock is None:
            conn.connect()
            sock: socket.socket = conn.sock  # type: ignore[assignment]  # set by connect()
            sock.settimeout(self._read_timeout_s)

    def _answer(self, conn: http.client.HTTPConnection) -> http.client.HTTPResponse:
        self._connected(conn)
        conn.endheaders()
        return conn.getresponse()

    def _take(self, key: _Key) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection the server has not closed meanwhile (its socket would read as ready), or a new one."""
        while True:
            with self._lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                return self._new(key), False
            if conn.sock is not None and not _readable(conn.sock):
                return conn, True
            conn.close()

    def _new(self, key: _Key) -> http.client.HTTPConnection:
        scheme, netloc = key
        if scheme == "http":
            return http.client.HTTPConnection(netloc, timeout=self._connect_timeout_s)
        return http.client.HTTPSConnection(netloc, timeout=self._connect_timeout_s, context=self._tls())

    def _tls(self) -> ssl.SSLContext:
        if self._ssl is None:
            if self._verify_tls:
                # the system's CAs (and SSL_CERT_FILE), or boto3's AWS_CA_BUNDLE where it is set
                self._ssl = ssl.create_default_context(cafile=os.environ.get("AWS_CA_BUNDLE") or None)
            else:
                self._ssl = ssl.create_default_context()
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl.CERT_NONE
        return self._ssl

    def _give_back(self, key: _Key, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self._max_idle:
                idle.append(conn)
                return
        conn.close()

    def _finish(self, key: _Key, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> bytes:
        """Read a small answer's body and keep the connection; close it for a large or broken one."""
        try:
            if resp.length is not None and resp.length <= _SMALL_BODY_LIMIT:
                body = resp.read()
                if not resp.will_close:
                    self._give_back(key, conn)
                    return body
                conn.close()
                return body
        except (OSError, http.client.HTTPException):
            pass
        conn.close()
        return b""


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection's socket has something to read: the server closed it (or broke the protocol)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _split(url: str) -> tuple[_Key, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("not an http(s) URL")
    path = parts.path or "/"
    return (parts.scheme, parts.netloc), f"{path}?{parts.query}" if parts.query else path


class HttpBody(io.RawIOBase):
    """One answer's body as a raw binary stream. Closed after its last byte, its connection goes back to the pool;
    closed before, the connection is closed (what is left of the body is never read)."""

    def __init__(
        self, resp: http.client.HTTPResponse, give_back: Callable[[], None], discard: Callable[[], None]
    ) -> None:
        super().__init__()
        self._resp = resp
        self._give_back = give_back
        self._discard = discard

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._resp.readinto(buffer)

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self._resp.length == 0:
                self._resp.read()  # an empty body nobody read: done all the same
            if self._resp.isclosed() and not self._resp.will_close:
                self._give_back()  # every byte was read: the connection is free for the next request
            else:
                self._resp.close()
                self._discard()
        finally:
            super().close()
