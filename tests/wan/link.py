"""Faults on the link of the WAN suite, through Toxiproxy's HTTP API: toxics added on every proxy of the link
(the source lakeFS's and the source store's) while a sync runs, and removed again to heal it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from lakefs_mirror_devenv import Environment, LinkSpec, Toxiproxy

from tests.faults.rig import FaultRig

__all__ = ["DST", "FAULTS", "SRC", "LinkFaults", "wait_for_copying", "wait_until"]

SRC, DST = "wan-src", "wan-dst"

#: Each kind of fault: the toxic put on the responses (downstream) of every proxy of the link.
FAULTS: dict[str, tuple[str, dict[str, int]]] = {
    # The peer resets every connection 20 ms into the fault: bodies cut off in the middle.
    "reset": ("reset_peer", {"timeout": 20}),
    # A blackhole: data is dropped and connections are held open until the toxic goes.
    "blackhole": ("timeout", {"timeout": 0}),
    # Connections close two seconds after the peer closed them.
    "slow_close": ("slow_close", {"delay": 2000}),
    # Each connection closes after 3000 bytes: truncated responses.
    "truncated": ("limit_data", {"bytes": 3000}),
}
#: The fifth kind: the link drops to 1 Mbit/s each way (the bandwidth toxics' rate, in KB/s).
SLOW_LINK_KB_PER_S = 125


@dataclass
class LinkFaults:
    """The link ``spec`` of ``env``; ``active`` names the toxics added, for ``heal``."""

    env: Environment
    spec: LinkSpec
    active: list[tuple[str, str]] = field(default_factory=list)

    @property
    def proxy(self) -> Toxiproxy:
        assert self.env.toxiproxy is not None
        return self.env.toxiproxy

    @property
    def proxies(self) -> list[str]:
        [link] = [lk for lk in self.env.links if lk["src"] == self.spec.src]
        return list(link["proxies"].values())

    def inject(self, kind: str) -> None:
        """Start fault ``kind`` (a key of ``FAULTS``, or ``slow``) on every proxy of the link."""
        if kind == "slow":
            self.reshape(replace(self.spec, rate_bits=SLOW_LINK_KB_PER_S * 8000))
            self.active.append(("", "slow"))
            return
        toxic, attributes = FAULTS[kind]
        for proxy in self.proxies:
            self.proxy.add_toxic(proxy, f"fault-{kind}", toxic, attributes, stream="downstream")
            self.active.append((proxy, f"fault-{kind}"))

    def heal(self) -> None:
        """Remove every fault: the link is back to its own latency and bandwidth."""
        for proxy, name in self.active:
            if name == "slow":
                self.reshape(self.spec)
            else:
                self.proxy.remove_toxic(proxy, name)
        self.active.clear()

    def reshape(self, spec: LinkSpec) -> None:
        """The link's latency and bandwidth toxics replaced by ``spec``'s, on every proxy."""
        for proxy in self.proxies:
            self.proxy.reshape(proxy, spec)


def wait_for_copying(rig: FaultRig, dst_ns: str, *, timeout_s: float = 120.0) -> bool:
    """Bounded poll for the event that shows the running sync copies objects: the first object present at the
    mirror's store. False if the sync ended first (then no fault landed mid-transfer)."""
    store = rig.store(rig.dst)
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / 0.02)):
        if rig.zygote().finished():
            return False
        if next(iter(store.list_prefix(f"{dst_ns}/data/")), None) is not None:
            return True
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    raise AssertionError(f"no object reached the mirror's store within {timeout_s:.0f}s")


def wait_until(check: Callable[[], bool], timeout_s: float, step_s: float = 0.05) -> bool:
    """Poll ``check`` until it holds or ``timeout_s`` passed (bounded in count and time); its last answer."""
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / step_s) + 1):
        if check() or time.monotonic() > deadline:
            break
        time.sleep(step_s)
    return check()
