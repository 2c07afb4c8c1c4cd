"""A scripted stand-in for lakeFS's HTTP API on a loopback port: each request takes the next answer.

Enough to drive ``LakeFSClient`` through the real generated SDK and urllib3 without a lakeFS server:
tests queue ``(status, JSON body)`` answers (or ``(status, JSON body, headers)``; a ``bytes`` body is sent as it
is, and a ``Content-Length`` header given replaces the true one) per path and read back the requests that arrived.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLakeFS", "Request", "fake_lakefs", "repository"]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]


@dataclass
class FakeLakeFS:
    endpoint: str
    answers: dict[str, deque[tuple[Any, ...]]] = field(default_factory=lambda: defaultdict(deque))
    requests: list[Request] = field(default_factory=list)

    def answer(self, path: str, *answers: tuple[Any, ...]) -> None:
        """Queue answers for ``/api/v1<path>``; the last one repeats once the queue is down to it."""
        self.answers[path].extend(answers)

    def next_answer(self, path: str) -> tuple[Any, ...]:
        queue = self.answers.get(path)
        if not queue:
            return 404, {"message": f"fake lakeFS has no answer for {path}"}
        return queue.popleft() if len(queue) > 1 else queue[0]


def repository(name: str) -> dict[str, Any]:
    """A repository as lakeFS describes it."""
    return {"id": name, "creation_date": 1700000000, "default_branch": "main", "storage_namespace": f"local://{name}"}


@contextmanager
def fake_lakefs() -> Iterator[FakeLakeFS]:
    """Serve a ``FakeLakeFS`` on 127.0.0.1 in a thread for the duration of the block."""
    fake: FakeLakeFS

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            path = url.path.removeprefix("/api/v1")
            if self.headers.get("Content-Length"):
                self.rfile.read(int(self.headers["Content-Length"]))
            fake.requests.append(Request(self.command, path, dict(urllib.parse.parse_qsl(url.query))))
            status, body, *more = fake.next_answer(path)
            raw = isinstance(body, bytes)
            data = body if raw else json.dumps(body).encode()
            headers = {"Content-Length": str(len(data)), **(more[0] if more else {})}
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/octet-stream" if raw else "application/json")
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake = FakeLakeFS(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="fake-lakefs", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
