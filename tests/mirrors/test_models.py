"""Mirror ids sort in the order they were made, so listings page in creation order (``list_mirrors``)."""

from __future__ import annotations

import re

from lakefs_mirror_dagster.mirrors.models import new_mirror_id


def test_ids_made_within_one_millisecond_still_sort_in_creation_order() -> None:
    ids = [new_mirror_id() for _ in range(5000)]  # many share a millisecond
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[0-9a-z]{26}", i) for i in ids)  # still a valid lakeFS repository name
