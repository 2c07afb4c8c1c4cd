"""The published OpenAPI document describes the reference's endpoints and their error answers."""

from __future__ import annotations

import json
from pathlib import Path

from lakefs_mirror_dagster.service import write_openapi


def test_write_openapi(tmp_path: Path) -> None:
    doc = json.loads(write_openapi(tmp_path / "openapi.json").read_text())
    base = "/service/replication/v1/repositories/{repo}/mirrors"
    assert set(doc["paths"][base]) == {"get", "post"}
    assert set(doc["paths"][base + "/{mirror_id}"]) == {"get", "delete"}
    post = doc["paths"][base]["post"]
    assert {"201", "400", "401", "403", "404", "409"} <= set(post["responses"])
    assert "422" not in json.dumps(doc["paths"])  # validation errors are 400s here
    assert doc["components"]["securitySchemes"]["HTTPBasic"]["scheme"] == "basic"


def test_committed_document_is_current() -> None:
    from lakefs_mirror_dagster.service import openapi_document

    committed = Path(__file__).parents[2] / "docs" / "openapi.json"
    assert json.loads(committed.read_text()) == openapi_document(), "regenerate: write_openapi('docs/openapi.json')"
