"""Through the lakeFS API, a backfill reads its objects with URLs lakeFS presigns, a page at a time, instead of
having lakeFS serve each one; where that cannot work, lakeFS serves them as before."""

from __future__ import annotations

import http.server
import logging
import re
import socket
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from lakefs_mirror_dagster.replication import ApiObjectReader
from lakefs_mirror_dagster.replication.source import PRESIGN_MIN_BYTES, PRESIGN_MIN_OBJECTS

from .conftest import assert_mirror_equals_source, assert_ref_complete, content

OBJECTS = PRESIGN_MIN_OBJECTS + 50


def lakefs_gets(endpoint: str) -> int:
    """How many GET requests lakeFS's API answered so far, from its own Prometheus metrics (lakeFS 1.84 counts
    them by method and status only)."""
    with urllib.request.urlopen(f"{endpoint}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    pattern = r'^api_requests_total\{[^}]*method="get"[^}]*\} (\S+)$'
    return sum(int(float(m.group(1))) for m in re.finditer(pattern, text, re.MULTILINE))


def write_through_gateway(region, repo: str, count: int) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    gateway = region.s3_gateway_client()
    expected = {f"events/part-{i:04d}.json": content(f"events/{i}", 300) for i in range(count)}
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda kv: gateway.put_object(Bucket=repo, Key=f"main/{kv[0]}", Body=kv[1]), expected.items()))
    return expected


def test_a_backfill_through_the_api_reads_presigned_pages_not_one_request_per_object(
    lakefs_env, service_for, unique_name
) -> None:  # type: ignore[no-untyped-def]
    src_svc, dst_svc = service_for("region-a"), service_for("region-c")
    src = src_svc.client("region-a")
    repo, mirror_name = unique_name("repo"), unique_name("mirror")
    region = lakefs_env.region("region-a")
    src.create_repository(repo, region.namespace_for(repo))
    write_through_gateway(region, repo, OBJECTS)
    commit = src.commit(repo, "main", f"{OBJECTS} objects written with boto3")
    src_svc.create_mirror(
        source_repository=repo,
        name=mirror_name,
        region="region-c",
        storage_namespace=lakefs_env.region("region-c").namespace_for(mirror_name),
    )
    gets = lakefs_gets(region.endpoint)

    [result] = dst_svc.sync(name=mirror_name)

    assert result.ok, result.to_json()
    assert result.refs[0].stats.objects_copied == OBJECTS
    # commits, refs, the metarange and range files, a page of presigned URLs: not a request per object
    assert lakefs_gets(region.endpoint) - gets < OBJECTS // 5
    assert_ref_complete(dst_svc, mirror_name, commit.id)
    assert_mirror_equals_source(src, repo, dst_svc.client("region-c"), mirror_name)


def test_a_source_lakefs_cannot_presign_for_is_read_through_lakefs(
    lakefs_env, service_for, unique_name, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    """region-b keeps its data on the local filesystem, which lakeFS does not presign."""
    src_svc, dst_svc = service_for("region-b"), service_for("region-a")
    src = src_svc.client("region-b")
    repo, mirror_name = unique_name("repo"), unique_name("mirror")
    src.create_repository(repo, lakefs_env.region("region-b").namespace_for(repo))
    for i in range(OBJECTS):
        src.upload_object(repo, "main", f"rows/{i:04d}", content(f"rows/{i}", 40))
    commit = src.commit(repo, "main", "rows")
    src_svc.create_mirror(
        source_repository=repo,
        name=mirror_name,
        region="region-a",
        storage_namespace=lakefs_env.region("region-a").namespace_for(mirror_name),
    )
    gets = lakefs_gets(lakefs_env.region("region-b").endpoint)
    with caplog.at_level(logging.INFO, logger="lakefs_mirror_dagster.replication.source"):
        [result] = dst_svc.sync(name=mirror_name)
    assert result.ok, result.to_json()
    assert lakefs_gets(lakefs_env.region("region-b").endpoint) - gets >= OBJECTS  # lakeFS served each object
    assert "reading objects through lakeFS" in caplog.text
    assert_ref_complete(dst_svc, mirror_name, commit.id)


class _ServesThroughLakeFS:
    """The part of LakeFSClient the reader uses, with URLs to a store that cannot be reached."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.served: list[str] = []

    def presigned_addresses(self, repo: str, ref: str, *, after: str, amount: int = 1000):  # type: ignore[no-untyped-def]
        return [(f"k{i:04d}", f"{self.url}/k{i:04d}?X-Amz-Signature=secret", 4_000_000_000) for i in range(300)], False

    def open_object(self, repo: str, ref: str, path: str):  # type: ignore[no-untyped-def]
        import io

        self.served.append(path)

        class Body(io.BytesIO):
            def release_conn(self) -> None:
                pass

        return Body(b"from lakefs")


def test_an_unreachable_store_falls_back_to_lakefs_once_and_never_logs_the_url(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = _ServesThroughLakeFS(f"http://127.0.0.1:{port}")
    reader = ApiObjectReader(client)  # type: ignore[arg-type]
    uris = [ApiObjectReader.uri("repo", "c1", f"k{i:04d}") for i in range(300)]
    reader.prepare_reads(uris)
    with caplog.at_level(logging.WARNING):
        for uri in uris[:3]:
            with reader.open_read(uri) as stream:
                assert stream.read() == b"from lakefs"
    assert client.served == ["k0000", "k0001", "k0002"]
    assert caplog.text.count("reading objects through lakeFS") == 1
    assert "secret" not in caplog.text
    reader.prepare_reads(uris)  # paused: no new URLs are fetched for a while
    with reader.open_read(uris[5]) as stream:
        assert stream.read() == b"from lakefs"


class _CountsPages(_ServesThroughLakeFS):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.pages = 0

    def presigned_addresses(self, repo: str, ref: str, *, after: str, amount: int = 1000):  # type: ignore[no-untyped-def]
        self.pages += 1
        return super().presigned_addresses(repo, ref, after=after, amount=amount)


def test_a_few_large_objects_are_read_presigned_too() -> None:
    """A page of presigned URLs pays for few objects when they are large: lakeFS would serve all their bytes."""
    client = _CountsPages("http://127.0.0.1:9")
    reader = ApiObjectReader(client)  # type: ignore[arg-type]
    uris = [ApiObjectReader.uri("repo", "c1", f"k{i:04d}") for i in range(3)]
    reader.prepare_reads(uris, [1024, 2048, None])  # a few small objects: lakeFS serves them, no page
    assert client.pages == 0
    reader.prepare_reads(uris, [PRESIGN_MIN_BYTES // 2, PRESIGN_MIN_BYTES // 2, None])
    assert client.pages == 1


class _PagesHeld(_ServesThroughLakeFS):
    """Pages of 1,000 presigned URLs to a real HTTP server; every page after the first is held until ``release``
    is set (``asked`` is set when one is asked for)."""

    def __init__(self, url: str, keys: int) -> None:
        super().__init__(url)
        self.keys = [f"k{i:05d}" for i in range(keys)]
        self.asked, self.release = threading.Event(), threading.Event()
        self.pages = 0

    def presigned_addresses(self, repo: str, ref: str, *, after: str, amount: int = 1000):  # type: ignore[no-untyped-def]
        if after >= self.keys[0]:  # not the first page
            self.asked.set()
            self.release.wait(60)
        self.pages += 1
        page = [k for k in self.keys if k > after][:amount]
        more = bool(page) and page[-1] != self.keys[-1]
        return [(k, f"{self.url}/{k}?X-Amz-Signature=s", 4_000_000_000) for k in page], more


class _Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = self.path.split("?")[0].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_pages_after_the_first_arrive_while_the_first_pages_objects_copy() -> None:
    """The first page of URLs comes before ``prepare_reads`` returns; a read of a key on a later page waits for it
    (and reads from the store, not through lakeFS)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    client = _PagesHeld(f"http://127.0.0.1:{server.server_address[1]}", keys=3000)
    try:
        reader = ApiObjectReader(client)  # type: ignore[arg-type]
        uris = [ApiObjectReader.uri("repo", "c1", k) for k in client.keys]
        reader.prepare_reads(uris)  # returns with the first page while the second is held
        assert client.pages == 1
        with reader.open_read(uris[0]) as stream:  # the first page's objects are read while the second is held
            assert stream.read() == b"/k00000"
        assert client.asked.wait(30) and client.pages == 1  # the later pages are on their way, not yet here
        client.release.set()
        with reader.open_read(uris[-1]) as stream:  # on the third page: waits for it
            assert stream.read() == b"/k02999"
        assert client.pages == 3 and client.served == []  # every read was presigned
    finally:
        client.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
