"""Values the config is made of: ``Secret``, Go-style durations, byte sizes, and the checks fields apply.

``parse_byte_size`` is the one byte-size parser of the package: the blockstores get sizes as ``int``s that
it produced, never text to parse again.
"""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Callable
from datetime import timedelta
from fractions import Fraction
from typing import Annotated, Any, Final, Literal
from urllib.parse import urlsplit

__all__ = [
    "AUTO",
    "ByteRate",
    "ByteSize",
    "Concurrency",
    "GiB",
    "KiB",
    "MiB",
    "Secret",
    "format_duration",
    "parse_byte_rate",
    "parse_byte_size",
    "parse_concurrency",
    "parse_duration",
    "parse_listen_address",
]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

_REDACTED = "**********"


class Secret:
    """A string that prints as ``**********`` so that logging a config never leaks credentials.

    ``reveal()`` is the only way to the value; equality is constant-time.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        if not isinstance(value, str):
            raise TypeError(f"Secret holds a str, not {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """The secret value itself; pass it straight to the client that needs it, never to a logger."""
        return self._value

    get_secret_value = reveal  # the name pydantic users expect

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret('{_REDACTED}')" if self._value else "Secret('')"

    def __str__(self) -> str:
        return _REDACTED if self._value else ""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        return (Secret, (self._value,))


_DURATION_UNITS_US: dict[str, Fraction] = {
    "ns": Fraction(1, 1000),
    "us": Fraction(1),
    "µs": Fraction(1),  # Go accepts both micro signs
    "μs": Fraction(1),
    "ms": Fraction(1000),
    "s": Fraction(1_000_000),
    "m": Fraction(60_000_000),
    "h": Fraction(3_600_000_000),
}
_DURATION_TERM = r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)"
_DURATION_RE = re.compile(rf"([+-]?)((?:{_DURATION_TERM})+)")
_DURATION_TERM_RE = re.compile(_DURATION_TERM)
_DURATION_HELP = "expected a number with a unit (ns, us, ms, s, m, h), e.g. '500ms', '20s', '1m', '1h30m'"


def parse_duration(value: str | timedelta) -> timedelta:
    """Parse a Go-style duration (``"1m"``, ``"20s"``, ``"1h30m"``, ``"500ms"``, ``"1.5h"``) into a timedelta.

    Go's syntax because the reference's defaults are written in it and lakeFS users know it. Bare numbers
    other than ``0`` are rejected: ``10`` could mean seconds or minutes.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"invalid duration {value!r}: {_DURATION_HELP}")
    if isinstance(value, int | float):
        if value == 0:
            return timedelta(0)
        raise ValueError(f"invalid duration {value!r}: missing unit; write e.g. '{value}s' or '{value}m'")
    text = value.strip()
    if text in ("0", "+0", "-0"):
        return timedelta(0)
    match = _DURATION_RE.fullmatch(text)
    if not match:
        hint = "; days are not a unit, use hours (e.g. '24h')" if text.endswith("d") else ""
        raise ValueError(f"invalid duration {value!r}: {_DURATION_HELP}{hint}")
    total = Fraction(0)
    for number, unit in _DURATION_TERM_RE.findall(match.group(2)):
        total += Fraction(number) * _DURATION_UNITS_US[unit]
    micros = round(total)
    return timedelta(microseconds=-micros if match.group(1) == "-" else micros)


def format_duration(value: timedelta) -> str:
    """The shortest Go-style text for ``value`` (``timedelta(minutes=90)`` -> ``"1h30m"``); parses back."""
    micros = value // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, rest = divmod(rest, 1_000_000)
    millis, rest = divmod(rest, 1000)
    text = "".join(
        f"{amount}{unit}"
        for amount, unit in ((hours, "h"), (minutes, "m"), (seconds, "s"), (millis, "ms"), (rest, "us"))
        if amount
    )
    return sign + text


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": 1024 * GiB,
}
_SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)")


def parse_byte_size(value: str | int) -> int:
    """Parse a byte count: an integer, or a number with a unit (``"64MiB"``, ``"16 MiB"``, ``"1.5GB"``).

    Bare ``K``/``M``/``G`` are refused because they are ambiguous between 1000- and 1024-based units.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"invalid byte size {value!r}: expected an integer or e.g. '64MiB'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"invalid byte size {value}: must not be negative")
        return value
    match = _SIZE_RE.fullmatch(value.strip())
    if not match:
        raise ValueError(f"invalid byte size {value!r}: expected an integer or a size such as '64MiB' or '16MB'")
    number, unit = match.group(1), match.group(2).lower()
    if unit in ("k", "m", "g", "t"):
        raise ValueError(
            f"invalid byte size {value!r}: unit {match.group(2)!r} is ambiguous; "
            f"write {unit.upper()}iB (powers of 1024) or {unit.upper()}B (powers of 1000)"
        )
    if unit not in _SIZE_UNITS:
        raise ValueError(
            f"invalid byte size {value!r}: unknown unit {match.group(2)!r} (use B, KiB, MiB, GiB, KB, MB, GB)"
        )
    amount = Fraction(number) * _SIZE_UNITS[unit]
    if amount.denominator != 1:
        raise ValueError(f"invalid byte size {value!r}: not a whole number of bytes")
    return int(amount)


class _Marker:
    """Tags an ``Annotated`` type with how to parse it (the Python type alone is just ``int``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_BYTE_SIZE = _Marker("byte size")
_BYTE_RATE = _Marker("byte rate")
_CONCURRENCY = _Marker("concurrency")
#: An ``int`` number of bytes that the config accepts as ``67108864`` or ``"64MiB"``.
ByteSize = Annotated[int, _BYTE_SIZE]
#: An ``int`` of bytes per second that the config accepts as ``6250000``, ``"50Mbit"`` or ``"10MiB"``.
ByteRate = Annotated[int, _BYTE_RATE]

#: ``transfer.concurrency``'s value that lets the copies in flight follow the link (``storage/concurrency.py``).
AUTO: Final = "auto"
#: Copies in flight: exactly that many (a whole number, at least 1), or ``"auto"``; ``12`` or ``"12"`` in the config.
Concurrency = Annotated[int | Literal["auto"], _CONCURRENCY]

#: Bits per second: decimal, as links are sold (rclone's ``--bwlimit`` and Toxiproxy's rates alike).
_BIT_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}


def parse_byte_rate(value: str | int) -> int:
    """Parse a rate into whole bytes per second: plain bytes (``6250000``), a byte size per second
    (``"10MiB"``, ``"10MB/s"``) or bits per second (``"50Mbit"``, ``"512kbit/s"``, ``"1Gbit"``). ``0``: no limit.

    A link is sold in bits and a disk in bytes; both are accepted, so an operator copies either figure as is."""
    if isinstance(value, str):
        text = value.strip()
        text = text[:-2].rstrip() if text.lower().endswith("/s") else text
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([A-Za-z]+)", text)
        if match and match.group(2).lower() in _BIT_UNITS:
            bits = Fraction(match.group(1)) * _BIT_UNITS[match.group(2).lower()]
            return int(bits / 8)
        try:
            return parse_byte_size(text)
        except ValueError:
            raise ValueError(
                f"invalid rate {value!r}: expected bytes per second (e.g. 6250000 or '10MiB') or bits per second "
                "(e.g. '50Mbit', '1Gbit')"
            ) from None
    return parse_byte_size(value)


def parse_concurrency(value: object) -> int | Literal["auto"]:
    """``auto`` (any case) or a whole number of at least 1 (``16`` or ``"16"``: env variables are text)."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO
    number = value.strip() if isinstance(value, str) else value
    if isinstance(number, str) and re.fullmatch(r"[+-]?\d+", number):
        number = int(number)
    if not isinstance(number, int) or isinstance(number, bool):
        shown = repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else value
        raise ValueError(f"expected a whole number (copies in flight, at least 1) or 'auto', got {shown}")
    if number < 1:
        raise ValueError(f"must be at least 1 copy in flight, or 'auto', got {number}")
    return number


# --------------------------------------------------------------------------------------------------------
# Field checks (normalise or refuse a converted value; raise ValueError with the problem)
# --------------------------------------------------------------------------------------------------------

_Check = Callable[[Any], Any]


def _at_least(minimum: int | timedelta) -> _Check:
    def check(value: Any) -> Any:
        if value < minimum:
            shown = format_duration(minimum) if isinstance(minimum, timedelta) else minimum
            got = format_duration(value) if isinstance(value, timedelta) else value
            raise ValueError(f"must be at least {shown}, got {got}")
        return value

    return check


def _duration_within(low: timedelta, high: timedelta, why: str) -> _Check:
    def check(value: timedelta) -> timedelta:
        if not low <= value <= high:
            raise ValueError(
                f"must be between {format_duration(low)} and {format_duration(high)} ({why}), "
                f"got {format_duration(value)}"
            )
        return value

    return check


def _positive_duration(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError(f"must be a positive duration, got {format_duration(value)}")
    return value


def _between(low: int, high: int, why: str) -> _Check:
    def check(value: int) -> int:
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high} bytes ({why}), got {value}")
        return value

    return check


def _http_url(value: str) -> str:
    """Accept ``http(s)://host[:port][/path]``, minus a trailing ``/`` or ``/api/v1``: the base URL."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http:// or https:// URL with a host")
    if parts.query or parts.fragment:
        raise ValueError(f"{value!r} must not have a query or fragment")
    try:
        _ = parts.port
    except ValueError as exc:
        raise ValueError(f"{value!r} has an invalid port") from exc
    base = value.rstrip("/")
    if base.endswith("/api/v1"):
        base = base[: -len("/api/v1")].rstrip("/")
    return base


def _optional_http_url(value: str) -> str:
    return _http_url(value) if value else value


def _nonempty(value: str | Secret) -> str | Secret:
    if not (value.reveal() if isinstance(value, Secret) else value).strip():
        raise ValueError("must not be empty")
    return value


_REGION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_STORE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")  # lakeFS's own rule for blockstores.stores[].id


def _region_name(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    if not _REGION_RE.match(value):
        raise ValueError(
            f"invalid region name {value!r}: use letters, digits, '.', '_' and '-', starting with a letter or digit"
        )
    return value


def _store_id(value: str) -> str:
    if not value:
        raise ValueError("must not be empty (every store in blockstores.stores needs an id)")
    if not _STORE_ID_RE.match(value):
        raise ValueError(
            f"invalid store id {value!r}: use letters, digits, '_' and '-', starting with a letter or digit"
        )
    return value


def _expand_path(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value if value == ":memory:" else os.path.expanduser(value)


def _optional_path(value: str) -> str:
    """A file path or ``""`` (not set); ``~`` expanded. Whether the file is readable is checked by its user."""
    return os.path.expanduser(value.strip()) if value.strip() else ""


def _listen_address(value: str) -> str:
    parse_listen_address(value)
    return value


def parse_listen_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[ipv6]:port`` -> (host, port); an empty host is ``0.0.0.0``. A ``ValueError`` naming the
    address otherwise (the API's and the metrics' listeners both parse theirs here)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"invalid listen address {address!r}: expected host:port, e.g. '0.0.0.0:8008'")
    if host.startswith("[") != host.endswith("]"):
        raise ValueError(f"invalid listen address {address!r}: unbalanced brackets around the IPv6 host")
    return host.removeprefix("[").removesuffix("]") or "0.0.0.0", int(port)


_SSE_VALUES = ("", "AES256", "aws:kms")


def _s3_sse(value: str) -> str:
    if value == "aws:kms:dsse":
        raise ValueError(
            "'aws:kms:dsse' (dual-layer SSE-KMS) is not supported: the mirror's objects are written with "
            "'AES256' or 'aws:kms' only; use 'aws:kms' (lakeFS reads objects of either)"
        )
    if value not in _SSE_VALUES:
        raise ValueError(f"unsupported value {value!r}; expected one of: {', '.join(repr(v) for v in _SSE_VALUES)}")
    return value


def _meta(
    check: _Check | None = None,
    *,
    key_check: _Check | None = None,
    value_check: _Check | None = None,
    stringify: bool = False,
    region_keyed: bool = False,
    doc: str = "",
) -> dict[str, Any]:
    """Field metadata read by the loader: checks for the value / map keys / map values, and env hints."""
    return {
        "check": check,
        "key_check": key_check,
        "value_check": value_check,
        "stringify": stringify,
        "region_keyed": region_keyed,
        "doc": doc,
    }
