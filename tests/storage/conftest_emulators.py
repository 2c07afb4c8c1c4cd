"""Module-scoped GCS and Azure emulators for the gs and azure blockstore tests.

Imported by tests/storage/test_gcs.py and test_azure.py (each starts only the emulator it uses). The
emulators install themselves on first use (``go install`` / ``npm install`` into the devenv cache), like
lakeFS and MinIO do; a failed install or start fails the tests, it never skips them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from lakefs_mirror_devenv.emulators import (
    AzuriteServer,
    FakeGCSServer,
    start_azurite,
    start_fake_gcs,
    stop_azurite,
    stop_fake_gcs,
)

from lakefs_mirror_dagster.storage import AzureBlockstore, GCSBlockstore

MiB = 1024 * 1024
#: Small sizes so that the multi-chunk / multi-block paths run on a few MiB.
SMALL_THRESHOLD = 1 * MiB
SMALL_CHUNK = 256 * 1024


@pytest.fixture(scope="module")
def fake_gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGCSServer]:
    server = start_fake_gcs(tmp_path_factory.mktemp("fake-gcs"))
    try:
        yield server
    finally:
        stop_fake_gcs(server)


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzuriteServer]:
    server = start_azurite(tmp_path_factory.mktemp("azurite"))
    try:
        yield server
    finally:
        stop_azurite(server)


def gcs_store_for(server: FakeGCSServer, **overrides: int) -> GCSBlockstore:
    settings = {"multipart_threshold": SMALL_THRESHOLD, "multipart_chunk_size": SMALL_CHUNK, **overrides}
    return GCSBlockstore(endpoint=server.endpoint, **settings)


def azure_store_for(server: AzuriteServer, **overrides: int) -> AzureBlockstore:
    settings = {"multipart_threshold": SMALL_THRESHOLD, "multipart_chunk_size": SMALL_CHUNK, **overrides}
    return AzureBlockstore(
        storage_account=server.account, storage_access_key=server.key, endpoint=server.endpoint, **settings
    )


@pytest.fixture
def gcs_store(fake_gcs: FakeGCSServer) -> GCSBlockstore:
    return gcs_store_for(fake_gcs)


@pytest.fixture
def make_gcs_bucket(gcs_store: GCSBlockstore) -> Callable[[], str]:
    def make() -> str:
        name = f"t-{uuid.uuid4().hex[:12]}"
        gcs_store.client.create_bucket(name)
        return name

    return make


@pytest.fixture
def azure_store(azurite: AzuriteServer) -> AzureBlockstore:
    return azure_store_for(azurite)


@pytest.fixture
def make_container(azure_store: AzureBlockstore) -> Callable[[], str]:
    """A fresh container; returns its canonical base URI ``https://<account>.blob.core.windows.net/<c>``."""

    def make() -> str:
        name = f"t-{uuid.uuid4().hex[:12]}"
        azure_store.client.create_container(name)
        return f"{azure_store.public_base}/{name}"

    return make
