"""``devenv up --link SRC->DST:rtt=80ms,jitter=5ms,rate=200Mbit``: a simulated link between two regions.

Everything the destination region's sync sends to the source region goes through Toxiproxy proxies: the source
lakeFS (its API and S3 gateway share one address) and, when the source is on MinIO, its store (the URLs the
source lakeFS presigns name the proxy, through lakeFS's ``blockstore.s3.pre_signed_endpoint``; with
``source_stores=on`` the destination also reads the store directly through it). With ``dest_store=on`` the
destination's sync also writes to its own store through a proxy (a sync running far from the store it fills);
the destination's lakeFS keeps its store next to it. Each proxy carries latency
(``rtt/2`` each way, with ``jitter``) and bandwidth (``rate`` each way) toxics; tests add fault toxics
(``reset_peer``, ``timeout``, ``limit_data``, ...) on top through the same HTTP API or ``toxiproxy-cli``.

Only the standard library is imported: ``scripts/dev`` imports this package before the venv exists.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .processes import DevenvError, free_port, start_process, stop_pid, wait_http_ok

__all__ = ["LinkSpec", "Toxiproxy", "parse_link_spec", "start_toxiproxy"]

_START_TIMEOUT_S = 30.0
_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s)$")
_RATE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>[kKMG]bit)$")
_RATE_BITS = {"kbit": 1e3, "Kbit": 1e3, "Mbit": 1e6, "Gbit": 1e9}
_SWITCH = {"on": True, "yes": True, "true": True, "off": False, "no": False, "false": False}
_SPEC_HELP = (
    "expected SRC->DST:rtt=80ms,jitter=5ms,rate=200Mbit[,source_stores=on][,dest_store=on] "
    "(rtt and jitter in ms or s, rate in kbit, Mbit or Gbit per second; every key optional)"
)


@dataclass(frozen=True)
class LinkSpec:
    """A link from region ``src`` (where data lives) to ``dst`` (whose sync reads it)."""

    src: str
    dst: str
    rtt_ms: float = 0.0
    jitter_ms: float = 0.0
    #: Bits per second each way; 0: unlimited.
    rate_bits: float = 0.0
    #: Whether the destination's config reads the source's store directly (``source_stores``), through the link.
    source_stores: bool = False
    #: Whether the destination's config (its ``blockstore``, which its sync writes to) names its own store through
    #: a proxy of the link.
    dest_store: bool = False

    @property
    def rate_kb_per_s(self) -> int:
        """Toxiproxy's ``bandwidth`` unit: KB (1000 bytes) per second."""
        return max(1, round(self.rate_bits / 8 / 1000))


def parse_link_spec(text: str) -> LinkSpec:
    """Parse ``SRC->DST[:key=value,...]``; anything else is a ``DevenvError`` of one line naming the part."""
    head, _, params = text.strip().partition(":")
    src, arrow, dst = (part.strip() for part in head.partition("->"))
    if not arrow or not src or not dst:
        raise DevenvError(f"bad link {text!r}: {_SPEC_HELP}")
    if src == dst:
        raise DevenvError(f"bad link {text!r}: source and destination are the same region")
    values: dict[str, Any] = {}
    for item in filter(None, params.split(",")):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not value:
            raise DevenvError(f"bad link {text!r}: {item!r} is not key=value; {_SPEC_HELP}")
        if key in values:
            raise DevenvError(f"bad link {text!r}: {key} given twice")
        if key in ("rtt", "jitter"):
            m = _DURATION.match(value)
            if m is None:
                raise DevenvError(f"bad link {text!r}: {key}={value} is not a duration such as 80ms or 0.08s")
            values[key] = float(m["n"]) * (1000.0 if m["unit"] == "s" else 1.0)
        elif key == "rate":
            m = _RATE.match(value)
            if m is None or float(m["n"]) <= 0:
                raise DevenvError(f"bad link {text!r}: rate={value} is not a rate such as 200Mbit, 512kbit or 1Gbit")
            values[key] = float(m["n"]) * _RATE_BITS[m["unit"]]
        elif key in ("source_stores", "dest_store"):
            if value.lower() not in _SWITCH:
                raise DevenvError(f"bad link {text!r}: {key}={value} is not on or off")
            values[key] = _SWITCH[value.lower()]
        else:
            raise DevenvError(f"bad link {text!r}: unknown key {key!r}; {_SPEC_HELP}")
    if values.get("jitter", 0.0) > values.get("rtt", 0.0) / 2:
        raise DevenvError(f"bad link {text!r}: jitter must be at most rtt/2 (the one-way latency)")
    return LinkSpec(
        src=src,
        dst=dst,
        rtt_ms=values.get("rtt", 0.0),
        jitter_ms=values.get("jitter", 0.0),
        rate_bits=values.get("rate", 0.0),
        source_stores=values.get("source_stores", False),
        dest_store=values.get("dest_store", False),
    )


@dataclass
class Toxiproxy:
    """A running Toxiproxy server, driven through its HTTP API."""

    api: str
    pid: int
    log_path: str
    #: proxy name -> its listen address (``127.0.0.1:port``).
    proxies: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One API call; a refusal is a ``DevenvError`` quoting Toxiproxy's answer."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.api}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise DevenvError(
                f"Toxiproxy {method} {path}: HTTP {exc.code} {exc.read().decode(errors='replace')}"
            ) from exc
        except OSError as exc:
            raise DevenvError(f"Toxiproxy {method} {path}: {exc}") from exc
        return json.loads(raw) if raw.strip() else None

    def add_proxy(self, name: str, upstream: str) -> str:
        """A proxy to ``upstream`` (``host:port``) on a free loopback port; returns its listen address."""
        listen = f"127.0.0.1:{free_port()}"
        self.request("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})
        self.proxies[name] = listen
        return listen

    def add_toxic(
        self, proxy: str, name: str, kind: str, attributes: dict[str, Any], *, stream: str, toxicity: float = 1.0
    ) -> None:
        body = {"name": name, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes}
        self.request("POST", f"/proxies/{proxy}/toxics", body)

    def remove_toxic(self, proxy: str, name: str) -> None:
        self.request("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        return list(self.request("GET", f"/proxies/{proxy}/toxics") or [])

    def reshape(self, proxy: str, link: LinkSpec) -> None:
        """Replace the link toxics of ``proxy`` by ``link``'s (a benchmark moving from 0 to 200 ms, a test
        dropping the rate); other toxics stay."""
        for toxic in self.toxics(proxy):
            if str(toxic["name"]).startswith("link-"):
                self.remove_toxic(proxy, toxic["name"])
        self.shape(proxy, link)

    def shape(self, proxy: str, link: LinkSpec) -> None:
        """The link's latency and bandwidth toxics on ``proxy``, both directions (named ``link-*``)."""
        for stream in ("upstream", "downstream"):
            if link.rtt_ms:
                latency = {"latency": round(link.rtt_ms / 2), "jitter": round(link.jitter_ms)}
                self.add_toxic(proxy, f"link-latency-{stream}", "latency", latency, stream=stream)
            if link.rate_bits:
                self.add_toxic(proxy, f"link-rate-{stream}", "bandwidth", {"rate": link.rate_kb_per_s}, stream=stream)


def start_toxiproxy(base_dir: Path) -> Toxiproxy:
    """Start ``toxiproxy-server`` on a free loopback port (its API), built on first use."""
    from .build import ensure_toxiproxy_binaries

    server, _cli = ensure_toxiproxy_binaries()
    base_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = base_dir / "toxiproxy.log"
    proc = start_process([str(server), "-host", "127.0.0.1", "-port", str(port)], log_path=log_path)
    api = f"http://127.0.0.1:{port}"
    try:
        wait_http_ok(f"{api}/version", timeout_s=_START_TIMEOUT_S, process=proc, log_path=log_path)
    except BaseException:
        stop_pid(proc.pid)
        raise
    return Toxiproxy(api=api, pid=proc.pid, log_path=str(log_path))
