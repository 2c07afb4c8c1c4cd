"""``devenv up --link SRC->DST:...``: the destination region reaches its source only through Toxiproxy proxies
that carry the link's latency and bandwidth; bad link specs are one-line refusals that start nothing."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from lakefs_mirror_devenv import DevenvError, ensure_toxiproxy_binaries, parse_link_spec
from lakefs_mirror_devenv.processes import pid_alive

from lakefs_mirror_dagster.cli import main
from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.lakefs import LakeFSClient
from lakefs_mirror_dagster.storage import build_blockstore

pytestmark = pytest.mark.integration


def test_a_link_spec_is_read_with_its_units() -> None:
    link = parse_link_spec("src->dst:rtt=80ms,jitter=5ms,rate=200Mbit")
    assert (link.src, link.dst, link.rtt_ms, link.jitter_ms, link.rate_bits) == ("src", "dst", 80, 5, 200e6)
    assert link.rate_kb_per_s == 25_000 and not link.source_stores and not link.dest_store
    slow = parse_link_spec("region-a->region-b:rtt=0.2s,rate=512kbit,source_stores=on,dest_store=yes")
    assert (slow.src, slow.dst, slow.rtt_ms, slow.rate_kb_per_s, slow.source_stores, slow.dest_store) == (
        "region-a",
        "region-b",
        200,
        64,
        True,
        True,
    )
    assert parse_link_spec("a->b") == parse_link_spec("a->b:")


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("a-b:rtt=80ms", "expected SRC->DST"),
        ("a->a:rtt=80ms", "the same region"),
        ("a->b:rtt=80", "rtt=80 is not a duration"),
        ("a->b:rtt=80ms,rate=200MB", "rate=200MB is not a rate"),
        ("a->b:rtt=80ms,loss=1%", "unknown key 'loss'"),
        ("a->b:rtt=10ms,jitter=8ms", "jitter must be at most rtt/2"),
        ("a->b:rtt", "'rtt' is not key=value"),
        ("a->b:rtt=1ms,rtt=2ms", "rtt given twice"),
        ("a->b:dest_store=maybe", "dest_store=maybe is not on or off"),
    ],
)
def test_a_bad_link_spec_is_refused_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(DevenvError, match="bad link") as refused:
        parse_link_spec(spec)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--link", "a->b:rtt=80ms,rate=200MB"), "lakefs-mirror: bad link 'a->b:rtt=80ms,rate=200MB': rate=200MB"),
        (("--region", "a", "--region", "b", "--link", "a->c:rtt=1ms"), "no region 'c'"),
        (("--region", "a", "--region", "b", "--link", "a->b:source_stores=on"), "source_stores=on needs a on MinIO"),
        (
            ("--region", "src=s3:m", "--region", "dst", "--link", "src->dst:dest_store=on"),
            "dest_store=on needs dst on MinIO",
        ),
    ],
    ids=["bad-spec", "unknown-region", "source-stores-on-local", "dest-store-on-local"],
)
def test_up_refuses_a_bad_link_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    state = tmp_path / "env"
    assert main(["dev", "devenv", "up", "--state-dir", str(state), *args]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert says in line, line
    assert not state.exists()


def _toxiproxy_cli(api: str, *args: str) -> str:
    """Toxiproxy's own CLI (built with the server), so the proxies are read by a client nobody here wrote."""
    _server, cli = ensure_toxiproxy_binaries()
    done = subprocess.run([str(cli), "--host", api, *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_up_with_a_link_routes_the_destination_through_shaped_proxies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "env"
    link = "src->dst:rtt=80ms,jitter=5ms,rate=200Mbit,source_stores=on,dest_store=on"
    up = [
        "dev",
        "devenv",
        "up",
        "--state-dir",
        str(state),
        "--region",
        "src=s3:ma",
        "--region",
        "dst=s3:mb",
        "--link",
        link,
    ]
    assert main([*up, "--json"]) == 0
    env = json.loads(capsys.readouterr().out)
    toxiproxy = env["toxiproxy"]
    try:
        api, proxies = toxiproxy["api"], toxiproxy["proxies"]
        src = env["regions"]["src"]
        # The proxies carry the link: 40 ms each way (rtt/2) with 5 ms jitter, 25000 KB/s (200 Mbit/s) each way.
        for proxy in ("src-lakefs", "src-store", "dst-dest-store"):
            shown = _toxiproxy_cli(api, "inspect", proxy)
            assert shown.count("latency=40") == 2 and shown.count("jitter=5") == 2, shown  # both directions
            assert shown.count("rate=25000") == 2, shown

        # The destination's config names the proxies; the source's own config does not.
        dst_config = load_config(state / "replication-dst.yaml", env={})
        assert dst_config.endpoint_for("src") == f"http://{proxies['src-lakefs']}"
        store = dst_config.source_store_for("src")
        assert store is not None and store.s3.endpoint == f"http://{proxies['src-store']}"
        # dest_store=on: the store the destination's sync writes to is its own MinIO through the link; the state
        # file records that proxy, and the destination's lakeFS keeps its MinIO next to it.
        saved = json.loads((state / "environment.json").read_text())
        assert saved["links"][0]["proxies"]["dest_store"] == "dst-dest-store"
        own = dst_config.default_store
        assert own is not None and own.s3.endpoint == f"http://{proxies['dst-dest-store']}"
        dst_minio = env["minio"]["mb"]
        assert env["regions"]["dst"]["blockstore"]["s3"]["endpoint"] == dst_minio["endpoint"]
        # A write as the sync makes it lands in the destination's MinIO, read there by boto3 without the proxy.
        landed = f"{env['regions']['dst']['namespace_root']}/landed/a.txt"
        build_blockstore(own).write_bytes(landed, b"written across the link")
        bucket, key = landed.removeprefix("s3://").split("/", 1)
        direct = boto3.client(
            "s3",
            endpoint_url=dst_minio["endpoint"],
            aws_access_key_id=dst_minio["access_key"],
            aws_secret_access_key=dst_minio["secret_key"],
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}),
        )
        assert direct.get_object(Bucket=bucket, Key=key)["Body"].read() == b"written across the link"
        assert (
            load_config(state / "replication-src.yaml", env={}).endpoint_for("dst") == env["regions"]["dst"]["endpoint"]
        )

        # The source lakeFS presigns its store's URLs through the link, and they work through the proxy.
        client = LakeFSClient(dst_config.endpoint_for("src"), src["access_key_id"], src["secret_access_key"])
        try:
            client.create_repository("linked", f"{src['namespace_root']}/linked")
            client.upload_object("linked", "main", "a.txt", b"across the link")
            [(path, url, _expiry)] = client.presigned_addresses("linked", "main", after="")[0]
            assert path == "a.txt" and urlsplit(url).netloc == proxies["src-store"], url
            with urllib.request.urlopen(url, timeout=30) as resp:
                assert resp.read() == b"across the link"

            # Disabled, the proxy cuts the destination off its source: nothing goes around it.
            _toxiproxy_cli(api, "toggle", "src-lakefs")
            assert not client.healthy()
            _toxiproxy_cli(api, "toggle", "src-lakefs")
            assert client.healthy()
            assert client.get_object("linked", "main", "a.txt") == b"across the link"
        finally:
            client.close()
        capsys.readouterr()
        assert main(["dev", "devenv", "status", "--state-dir", str(state)]) == 0
        assert json.loads(capsys.readouterr().out)["toxiproxy"]["alive"]
    finally:
        assert main(["dev", "devenv", "down", "--state-dir", str(state)]) == 0
    assert not pid_alive(toxiproxy["pid"])
