"""``lakefs_front``: one address for the lakeFS API, its S3 gateway and the replication API, as the
reference's curl commands (``<SOURCE_LAKEFS_ENDPOINT>/service/replication/v1/...``) assume.

``serve`` runs in front of region-a's real lakeFS, turned on the way an operator does it (the config key,
here through its environment variable). A small loopback HTTP server stands in for lakeFS only where the
test must see the wire itself (exact headers and request target) or needs a lakeFS that never answers.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.region import ReplicationService

from .conftest import Api, curl

pytestmark = pytest.mark.integration

MiB = 1024 * 1024
Fronting = Callable[..., AbstractContextManager[Api]]


@pytest.fixture
def fronting(serve_api: Callable[..., AbstractContextManager[Api]], config_path: Callable[[str], Path]) -> Fronting:
    """``with fronting(**env) as api:`` serve for region-a with ``REPLICATION_LAKEFS_FRONT_ENABLED=true``
    (and any other ``REPLICATION_*`` settings in ``env``), loaded as ``lakefs-mirror`` loads its config."""

    @contextmanager
    def start(**env: str) -> Iterator[Api]:
        config = load_config(config_path("region-a"), env={"REPLICATION_LAKEFS_FRONT_ENABLED": "true", **env})
        service = ReplicationService(config)
        try:
            with serve_api(service=service) as api:
                yield api
        finally:
            service.close()

    return start


def _s3(endpoint: str, key: str, secret: str) -> Any:
    """boto3 as a user points it at lakeFS's S3 gateway: path-style, SigV4 (presigned URLs too), no retries."""
    import boto3
    from botocore.config import Config

    config = Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"total_max_attempts": 1})
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1", config=config)  # fmt: skip


def _source_repo(lakefs_env: Environment, client_for: Callable[[str], LakeFSClient], name: str) -> str:
    client_for("region-a").create_repository(name, lakefs_env.region("region-a").namespace_for(name))
    return name


def test_one_address_serves_lakefs_its_s3_gateway_and_the_replication_api(
    fronting: Fronting, lakefs_env: Environment, client_for: Callable[[str], LakeFSClient], unique_name: Any
) -> None:
    region = lakefs_env.region("region-a")
    repo = _source_repo(lakefs_env, client_for, unique_name("front"))
    direct = client_for("region-a")
    with fronting() as api:
        # The lakeFS REST API, with lakefs-sdk pointed at the one address.
        lakefs = LakeFSClient(api.url, region.access_key_id, region.secret_access_key, attempts=1)
        try:
            assert repo in {r.id for r in lakefs.list_repositories()}
            lakefs.create_branch(repo, "dev", "main")
            lakefs.upload_object(repo, "dev", "api/hello.txt", b"hello")
            commit = lakefs.commit(repo, "dev", "through the front")
        finally:
            lakefs.close()
        assert direct.get_branch_head(repo, "dev") == commit.id
        # A UI login's session cookie goes to the caller who logged in, and only there: the next caller is no one.
        login = curl(f"{api.url}/api/v1/auth/login", "-H", "Content-Type: application/json", "--data", json.dumps(
            {"access_key_id": region.access_key_id, "secret_access_key": region.secret_access_key}))  # fmt: skip
        assert login.status == 200 and "internal_auth_session=" in login.headers["set-cookie"]
        session = login.headers["set-cookie"].split(";")[0]
        assert curl(f"{api.url}/api/v1/user", "-H", f"Cookie: {session}").body["user"]["id"] != ""
        assert curl(f"{api.url}/api/v1/user").body["user"]["id"] == ""
        assert direct.get_object(repo, "dev", "api/hello.txt") == b"hello"

        # The S3 gateway, SigV4 signed for the front's address: lakeFS verifies it against the Host it receives.
        s3 = _s3(api.url, region.access_key_id, region.secret_access_key)
        s3.put_object(Bucket=repo, Key="dev/s3/a b+c=d~e.txt", Body=b"put")
        parts = [os.urandom(5 * MiB), b"tail"]
        upload = s3.create_multipart_upload(Bucket=repo, Key="dev/s3/multi.bin")["UploadId"]
        etags = [
            s3.upload_part(Bucket=repo, Key="dev/s3/multi.bin", UploadId=upload, PartNumber=n, Body=part)["ETag"]
            for n, part in enumerate(parts, 1)
        ]
        s3.complete_multipart_upload(
            Bucket=repo,
            Key="dev/s3/multi.bin",
            UploadId=upload,
            MultipartUpload={"Parts": [{"ETag": e, "PartNumber": n} for n, e in enumerate(etags, 1)]},
        )
        assert s3.get_object(Bucket=repo, Key="dev/s3/multi.bin")["Body"].read() == b"".join(parts)
        assert s3.head_object(Bucket=repo, Key="dev/s3/multi.bin")["ContentLength"] == 5 * MiB + 4
        s3.put_object(Bucket=repo, Key="dev/s3/gone.txt", Body=b"")
        s3.delete_object(Bucket=repo, Key="dev/s3/gone.txt")
        listed = s3.list_objects_v2(Bucket=repo, Prefix="dev/s3/")
        assert [o["Key"] for o in listed["Contents"]] == ["dev/s3/a b+c=d~e.txt", "dev/s3/multi.bin"]
        assert direct.get_object(repo, "dev", "s3/a b+c=d~e.txt") == b"put"  # really in lakeFS
        presigned = s3.generate_presigned_url("get_object", Params={"Bucket": repo, "Key": "dev/s3/a b+c=d~e.txt"})
        assert urllib.request.urlopen(presigned, timeout=30).read() == b"put"  # a query-string signature
        forged = _s3(api.url, region.access_key_id, "not-the-secret")
        with pytest.raises(ClientError, match="SignatureDoesNotMatch"):
            forged.get_object(Bucket=repo, Key="dev/s3/multi.bin")

        # Path-style S3 for the repository "service", branch "replication": signed, so lakeFS's, like any other.
        client_for("region-a").create_repository("service", region.namespace_for("service"))
        try:
            direct.create_branch("service", "replication", "main")
            s3.put_object(Bucket="service", Key="replication/v1/openapi.json", Body=b"an object")
            assert s3.get_object(Bucket="service", Key="replication/v1/openapi.json")["Body"].read() == b"an object"
            assert direct.get_object("service", "replication", "v1/openapi.json") == b"an object"
        finally:
            direct.delete_repository("service", force=True)

        # The reference's replication commands on the same address, with the service's own auth.
        mirrors = f"{api.url}/service/replication/v1/repositories/{repo}/mirrors"
        name = unique_name("mirror")
        namespace = lakefs_env.region("region-b").namespace_for(name)
        body = {"name": name, "region": "region-b", "storage_namespace": namespace}
        created = curl(mirrors, "--header", "Content-Type: application/json", "-u", api.user, "-X", "POST",
                       "--data", json.dumps(body))  # fmt: skip
        assert created.status == 201, created.body
        assert [m["name"] for m in curl(mirrors, "-u", api.user, "-s").body["results"]] == [name]
        anonymous = curl(mirrors)
        assert anonymous.status == 401 and "lakefs-mirror" in anonymous.headers["www-authenticate"]
        # lakeFS's own credentials scheme is no way around it: the service checks every replication request.
        assert curl(mirrors, "-H", f"Authorization: Bearer {region.secret_access_key}").status == 401
        unknown = curl(f"{api.url}/service/replication/v2/repositories/{repo}/mirrors", "-u", api.user)
        assert unknown.status == 404 and unknown.body == {"message": "Not Found"}  # the service's, not lakeFS's
        assert curl(f"{api.url}/_health").body == {"status": "ok"}


def _rss_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def _peak_rss_growth(result: list[int], *, period_s: float = 0.005) -> Iterator[None]:
    """Samples this process's RSS while the block runs; appends the peak growth over the start to ``result``."""
    start, peak, done = _rss_bytes(), [0], threading.Event()

    def sample() -> None:
        while not done.wait(period_s):
            peak[0] = max(peak[0], _rss_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join(5)
        result.append(max(peak[0], _rss_bytes()) - start)


def test_a_large_object_streams_through_without_being_held_in_memory(
    fronting: Fronting,
    lakefs_env: Environment,
    client_for: Callable[[str], LakeFSClient],
    unique_name: Any,
    tmp_path: Path,
) -> None:
    repo = _source_repo(lakefs_env, client_for, unique_name("big"))
    source, back = tmp_path / "big.bin", tmp_path / "back.bin"
    digest = hashlib.sha256()
    with source.open("wb") as f:
        for _ in range(32):
            chunk = os.urandom(MiB)
            digest.update(chunk)
            f.write(chunk)
    with fronting() as api:
        objects = f"{api.url}/api/v1/repositories/{repo}"
        curl(f"{objects}/refs/main/objects/stat?path=warm", "-u", api.user)  # pools and buffers warm, not measured
        growth: list[int] = []
        with _peak_rss_growth(growth):  # serve runs in this process; curl, the only other party, does not
            put = curl(f"{objects}/branches/main/objects?path=big.bin", "-u", api.user, "-X", "POST",
                       "-H", "Content-Type: application/octet-stream", "-T", str(source))  # fmt: skip
            got = curl(f"{objects}/refs/main/objects?path=big.bin", "-u", api.user, output=back)
    assert put.status == 201, put.body
    assert put.body["size_bytes"] == 32 * MiB
    assert got.status == 200 and got.headers["content-length"] == str(32 * MiB)
    assert hashlib.sha256(back.read_bytes()).hexdigest() == digest.hexdigest()
    assert growth[0] < 16 * MiB, f"serve's memory grew by {growth[0] / MiB:.1f} MiB passing 32 MiB each way"


class _Wire(http.server.BaseHTTPRequestHandler):
    """Stands in for lakeFS where a test must see the wire: answers what it received, as JSON; ``/slow``
    answers only once the test sets the server's ``release`` (and sets ``slow_answered`` then)."""

    protocol_version = "HTTP/1.1"
    server: _WireServer

    def _answer(self) -> None:
        slow = self.path.startswith("/slow")
        if slow:
            self.server.release.wait(60)
        length = int(self.headers.get("Content-Length", "0"))
        body = json.dumps(
            {
                "method": self.command,
                "target": self.path,
                "headers": [[k.lower(), v] for k, v in self.headers.items()],
                "body": self.rfile.read(length).decode(),
            }
        ).encode()
        self.send_response(207)
        for name, value in [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Connection", "X-Hop"),
            ("X-Hop", "hop-by-hop"),
            ("Keep-Alive", "timeout=5"),
            ("X-End", "end-to-end"),
        ]:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        if slow:
            self.server.slow_answered.set()

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _WireServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Wire]) -> None:
        super().__init__(address, handler)
        self.release, self.slow_answered = threading.Event(), threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: ``/slow`` answers a caller that has left."""


@contextmanager
def _wire_server() -> Iterator[_WireServer]:
    server = _WireServer(("127.0.0.1", free_port()), _Wire)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def _url(server: _WireServer) -> str:
    return f"http://127.0.0.1:{server.server_port}"


def test_requests_and_answers_pass_unchanged_but_for_hop_by_hop_headers(fronting: Fronting) -> None:
    with _wire_server() as wire, fronting(REPLICATION_REGIONAL_ENDPOINT=_url(wire)) as api:
        host = api.url.removeprefix("http://")
        answer = curl(
            "--path-as-is", f"{api.url}/repo/main/a%20b/../c%2Fd+e?list-type=2&prefix=x%2Fy&empty=",
            "-X", "PUT", "--data-binary", "payload", "-u", "key:secret",
            "-H", "X-Amz-Date: 20260101T000000Z", "-H", "X-Multi: 1", "-H", "X-Multi: 2",
            "-H", "Connection: keep-alive, X-Private", "-H", "X-Private: for the front only",
            "-H", "Proxy-Authorization: Basic front-only", "-H", "TE: trailers",
        )  # fmt: skip
        # The front adds itself to Via; a request that comes back carrying it (regional_endpoint pointing at
        # serve itself) is refused at once, not passed round again.
        [via] = [v for k, v in answer.body["headers"] if k == "via"]
        looped = curl(f"{api.url}/api/v1/repositories", "-H", f"Via: 1.0 elsewhere, {via}")
    assert looped.status == 508 and "leads back to this server" in looped.body["message"]
    assert answer.status == 207
    seen = answer.body
    assert (seen["method"], seen["body"]) == ("PUT", "payload")
    assert seen["target"] == "/repo/main/a%20b/../c%2Fd+e?list-type=2&prefix=x%2Fy&empty="  # as sent, not normalized
    headers = seen["headers"]
    assert ["host", host] in headers  # the address the caller signed for, not lakeFS's
    assert ["authorization", "Basic a2V5OnNlY3JldA=="] in headers
    assert ["x-amz-date", "20260101T000000Z"] in headers and ["content-length", "7"] in headers
    assert [v for k, v in headers if k == "x-multi"] == ["1", "2"]
    names = {k for k, _ in headers}
    assert not names & {"connection", "x-private", "proxy-authorization", "te", "accept-encoding"}, names
    # The answer: lakeFS's status and end-to-end headers; hop-by-hop ones dropped.
    assert answer.headers["x-end"] == "end-to-end" and answer.headers["content-type"] == "application/json"
    assert "x-hop" not in answer.headers and "keep-alive" not in answer.headers


def test_a_down_or_silent_lakefs_is_a_gateway_error_with_a_message(fronting: Fronting) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with fronting(REPLICATION_REGIONAL_ENDPOINT=dead) as api:
        down = curl(f"{api.url}/api/v1/repositories", "-u", api.user)
        assert down.status == 502
        assert down.body["message"].startswith(f"lakeFS at {dead} is unreachable")
        assert curl(f"{api.url}/_health").body == {"status": "ok"}  # the service itself still answers
    slow = {"REPLICATION_LAKEFS_FRONT_TIMEOUT": "500ms"}
    with _wire_server() as wire, fronting(REPLICATION_REGIONAL_ENDPOINT=_url(wire), **slow) as api:
        silent = curl(f"{api.url}/slow/api/v1/repositories")  # lakeFS holds its answer until released
        assert silent.status == 504
        assert silent.body == {"message": f"lakeFS at {_url(wire)} did not answer within 0.5s"}
        assert not wire.slow_answered.is_set()  # the front answered while lakeFS was still silent


def test_without_the_setting_serve_passes_nothing_through(api: Api) -> None:
    """The default: serve answers only its own routes; a lakeFS path is its 404."""
    answer = curl(f"{api.url}/api/v1/repositories", "-u", api.user)
    assert answer.status == 404 and answer.body == {"message": "Not Found"}
