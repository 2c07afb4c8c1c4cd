"""Whether an entry's physical address is a full URI or relative to the repository's storage namespace.

Replication copies relative addresses namespace-to-namespace; full addresses point elsewhere. Entries
from before lakeFS recorded the address type (``BY_PREFIX_DEPRECATED``) are resolved as lakeFS does in
``pkg/block/namespace.go``: full if Go's ``url.ParseRequestURI`` accepts the address and its scheme is
a storage scheme lakeFS knows, else relative.
"""

from __future__ import annotations

import enum
import re

__all__ = ["KNOWN_SCHEMES", "AddressType", "address_is_full"]


class AddressType(enum.IntEnum):
    """``catalog.Entry.AddressType``."""

    BY_PREFIX_DEPRECATED = 0
    RELATIVE = 1
    FULL = 2


# pkg/block/namespace.go: GetStorageType
KNOWN_SCHEMES = frozenset({"s3", "mem", "memory", "local", "gs", "http", "https"})

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_CTL = re.compile(r"[\x00-\x1f\x7f]")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Characters Go's url package refuses in a host (outside IPv6 brackets); ':' is checked with the port.
_HOST_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=\[\]<>\"%:]*")
_PORT_OK = re.compile(r":[0-9]*")


def _parses_as_request_uri_with_scheme(address: str) -> str | None:
    """The lower-cased scheme if Go's url.ParseRequestURI would accept ``address`` (approximation)."""
    if not address or _CTL.search(address):
        return None
    m = _SCHEME.match(address)
    if m is None:
        return None
    scheme = m.group(1).lower()
    rest = address[m.end() :]
    path = rest.split("?", 1)[0]
    if not path.startswith("/"):
        return scheme  # opaque URI such as "s3:bucket/key": accepted by Go when a scheme is present
    if path.startswith("//") and not path.startswith("///"):
        authority, _, path = path[2:].partition("/")
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            close = host.find("]")
            if close < 0 or not _PORT_OK.fullmatch(host[close + 1 :] or ":"):
                return None
        else:
            colon = host.rfind(":")
            if colon >= 0 and not _PORT_OK.fullmatch(host[colon:]):
                return None
            if not _HOST_OK.fullmatch(host) or _BAD_ESCAPE.search(host):
                return None
    if _BAD_ESCAPE.search(path):
        return None
    return scheme


def address_is_full(address: str, address_type: int) -> bool:
    """Apply lakeFS's address-type rules; raises ValueError for an address type lakeFS does not define."""
    if address_type == AddressType.RELATIVE:
        return False
    if address_type == AddressType.FULL:
        return True
    if address_type == AddressType.BY_PREFIX_DEPRECATED:
        return _parses_as_request_uri_with_scheme(address) in KNOWN_SCHEMES
    raise ValueError(f"unknown entry address type {address_type} for address {address!r}")
