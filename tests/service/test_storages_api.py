"""``GET /service/replication/v1/config/storages``: the stores of the region the API runs in."""

from __future__ import annotations

import pytest

from .conftest import curl

pytestmark = pytest.mark.integration


def test_the_api_lists_the_source_regions_stores(serve_api) -> None:
    with serve_api() as api:
        url = f"{api.url}/service/replication/v1/config/storages"
        answer = curl(url, "-u", api.user)
        assert answer.status == 200, answer.body
        assert [(s["id"], s["type"]) for s in answer.body["results"]] == [("", "s3")]
        assert curl(url).status == 401
