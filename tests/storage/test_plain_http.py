"""HttpConnections keeps connections alive across presigned reads, survives a server that dropped an idle one, and never
reuses a connection whose body was left half-read."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from lakefs_mirror_dagster.storage.plain_http import HttpConnections, HttpStatusError

BODY = bytes(range(256)) * 64  # 16 KiB


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def do_GET(self) -> None:
        server: _Server = self.server  # type: ignore[assignment]
        server.paths.append(self.path)
        if self.path.startswith("/missing"):
            body = b"<Error><Code>NoSuchKey</Code></Error>"
            self.send_response(404)
        elif self.path.startswith("/slow"):
            time.sleep(1.0)
            body = BODY
            self.send_response(200)
        else:
            body = BODY
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if self.path.startswith("/then-close"):
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.paths: list[str] = []
        self.connections = 0

    def process_request(self, request, client_address):  # type: ignore[no-untyped-def]
        self.connections += 1
        super().process_request(request, client_address)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def url(server: _Server, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def read_all(gets: HttpConnections, target: str) -> bytes:
    with gets.get(target) as body:
        return body.read()


def test_bodies_read_to_the_end_share_one_connection_and_keep_the_query(server: _Server) -> None:
    gets = HttpConnections(connect_timeout_s=5, read_timeout_s=5)
    for i in range(5):
        assert read_all(gets, url(server, f"/bucket/k{i}?X-Amz-Signature=s{i}")) == BODY
    gets.close()
    assert server.connections == 1
    assert server.paths == [f"/bucket/k{i}?X-Amz-Signature=s{i}" for i in range(5)]


def test_a_connection_the_server_closed_is_replaced_without_an_error(server: _Server) -> None:
    gets = HttpConnections(connect_timeout_s=5, read_timeout_s=5)
    assert read_all(gets, url(server, "/then-close")) == BODY  # the server closes it after the answer
    time.sleep(0.2)
    assert read_all(gets, url(server, "/next")) == BODY
    gets.close()
    assert server.connections == 2


def test_a_body_closed_half_read_closes_its_connection(server: _Server) -> None:
    gets = HttpConnections(connect_timeout_s=5, read_timeout_s=5)
    with gets.get(url(server, "/a")) as body:
        assert body.read(100) == BODY[:100]
    assert read_all(gets, url(server, "/b")) == BODY  # not the half-read connection: a new one
    gets.close()
    assert server.connections == 2


def test_another_status_is_an_error_and_the_connection_stays_usable(server: _Server) -> None:
    gets = HttpConnections(connect_timeout_s=5, read_timeout_s=5)
    with pytest.raises(HttpStatusError) as raised:
        gets.get(url(server, "/missing"))
    assert raised.value.status == 404
    assert read_all(gets, url(server, "/ok")) == BODY
    gets.close()
    assert server.connections == 1


def test_a_silent_server_times_out_and_a_closed_port_refuses(server: _Server) -> None:
    gets = HttpConnections(connect_timeout_s=5, read_timeout_s=0.2)
    with pytest.raises(TimeoutError):
        gets.get(url(server, "/slow"))
    server.server_close()
    with pytest.raises(OSError):
        gets.get(url(server, "/after"))
    with pytest.raises(ValueError, match="not an http"):
        gets.get("ftp://127.0.0.1/x")
