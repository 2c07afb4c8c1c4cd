"""A real API server per test: uvicorn on a free loopback port, in front of region-a's service."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lakefs_mirror_devenv import Environment
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.region import ReplicationService
from lakefs_mirror_dagster.service import create_app, running_server
from tests.replication.conftest import config_path, service_for  # noqa: F401 (fixtures)


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


def curl(*args: str, output: Path | None = None) -> Answer:
    """Run curl as a user would, adding only flags that capture status and headers (bounded in time).

    The body is parsed as JSON, or with ``output`` written there instead (any size; ``body`` is then None).
    """
    with tempfile.TemporaryDirectory() as tmp:
        head_file, body_file = Path(tmp, "headers"), output or Path(tmp, "body")
        proc = subprocess.run(
            ["curl", *args, "-s", "--max-time", "60", "-D", str(head_file), "-o", str(body_file), "-w", "%{http_code}"],
            capture_output=True,
            text=True,
            timeout=90,
            check=True,
        )
        body_text = body_file.read_text() if body_file.exists() and output is None else ""
        headers = {}
        for line in head_file.read_text().splitlines()[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    return Answer(int(proc.stdout), json.loads(body_text) if body_text.strip() else None, headers)


@dataclass
class Api:
    url: str
    user: str  # "<ACCESS_KEY_ID>:<SECRET_ACCESS_KEY>"
    service: ReplicationService


@pytest.fixture
def serve_api(
    lakefs_env: Environment,
    service_for: Callable[[str], ReplicationService],  # noqa: F811
) -> Iterator[Callable[..., AbstractContextManager[Api]]]:
    """``with serve_api(**create_app_kwargs) as api:`` a live server for region-a (the source side)."""
    from contextlib import contextmanager

    region = lakefs_env.region("region-a")

    @contextmanager
    def start(service: ReplicationService | None = None, **kwargs: Any) -> Iterator[Api]:
        svc = service or service_for("region-a")
        with running_server(create_app(svc, **kwargs), "127.0.0.1", free_port()) as url:
            yield Api(url, f"{region.access_key_id}:{region.secret_access_key}", svc)

    yield start


@pytest.fixture
def api(serve_api: Callable[..., AbstractContextManager[Api]]) -> Iterator[Api]:
    with serve_api() as live:
        yield live
