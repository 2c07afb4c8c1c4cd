"""Scrub slices: ``--part K/N`` splits ranges by ID so that N runs read every range exactly once."""

from __future__ import annotations

import hashlib

import pytest

from lakefs_mirror_dagster.region.scrub import in_part, parse_part


def test_the_slices_of_n_cover_every_range_exactly_once() -> None:
    ranges = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(500)]
    for n in (1, 3, 24):
        owners = [[k for k in range(n) if in_part(r, (k, n))] for r in ranges]
        assert all(len(o) == 1 for o in owners)
        assert len({o[0] for o in owners}) == n  # and no slice is empty on 500 ranges
    assert all(in_part(r, None) for r in ranges)


@pytest.mark.parametrize("text", ["3", "3/3", "-1/4", "a/b", "1/0", ""])
def test_a_bad_part_is_refused_naming_the_form(text: str) -> None:
    with pytest.raises(ValueError, match="K/N"):
        parse_part(text)


def test_a_part_reads_back() -> None:
    assert parse_part("5/24") == (5, 24)
