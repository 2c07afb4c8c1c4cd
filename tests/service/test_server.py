"""Listen addresses as the config writes them, including IPv6."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.service import parse_listen_address


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("0.0.0.0:8008", ("0.0.0.0", 8008)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9000", ("::1", 9000)),
        (":8008", ("0.0.0.0", 8008)),
    ],
)
def test_parse(address: str, expected: tuple[str, int]) -> None:
    assert parse_listen_address(address) == expected


@pytest.mark.parametrize("address", ["8008", "host:", "host:http", "host:70000"])
def test_bad_address_names_the_value(address: str) -> None:
    with pytest.raises(ValueError, match="invalid listen address"):
        parse_listen_address(address)
