"""Where an S3 store's credentials come from when the config gives no keys: the ``s3.profile`` of the AWS shared
files, ``s3.credentials_file``, or the AWS default chain (here: the environment). Against a real MinIO, with the
AWS files written by the test into a HOME of its own, so nothing on the machine leaks in."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lakefs_mirror_dagster.config import parse_store
from lakefs_mirror_dagster.storage import StorageAccessError, StorageConfigError, build_blockstore, copy_object

from .conftest import S3ServerLike

AWS_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


@pytest.fixture
def aws_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with an empty ~/.aws and no AWS variables: the chain finds only what a test puts there. The
    instance metadata service is switched off, so a missing credential fails at once instead of probing."""
    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    (tmp_path / ".aws").mkdir()
    return tmp_path


def _store(server: S3ServerLike, **s3: Any) -> Any:
    """A store built from config-shaped settings, as the replication config's ``blockstores.stores`` entry."""
    settings = {"endpoint": server.endpoint, "force_path_style": True, "max_retries": 0, **s3}
    return build_blockstore(parse_store({"id": "minio", "type": "s3", "s3": settings}))


def _copies(store: Any, make_bucket: Callable[[str], str]) -> None:
    """The store writes, copies (server-side: one endpoint) and reads back objects."""
    src, dst = make_bucket("cred-src"), make_bucket("cred-dst")
    data = os.urandom(64 * 1024)
    store.write_bytes(f"s3://{src}/ns/data/o", data)
    result = copy_object(store, f"s3://{src}/ns/data/o", store, f"s3://{dst}/ns/data/o")
    assert result.size == len(data)
    assert store.read_bytes(f"s3://{dst}/ns/data/o") == data


def _credentials(profile: str, server: S3ServerLike) -> str:
    return f"[{profile}]\naws_access_key_id = {server.access_key}\naws_secret_access_key = {server.secret_key}\n"


def test_a_store_with_a_profile_uses_that_profiles_keys(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], aws_home: Path
) -> None:
    (aws_home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n" + _credentials("mirror", s3_server)
    )
    _copies(_store(s3_server, profile="mirror"), make_bucket)
    # Without the profile the chain takes [default], whose keys MinIO does not know.
    with pytest.raises(StorageAccessError):
        _store(s3_server).write_bytes(f"s3://{make_bucket('cred')}/x", b"x")


def test_a_profile_from_the_credentials_file_the_store_names(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], aws_home: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "secrets" / "minio-credentials"
    elsewhere.parent.mkdir()
    elsewhere.write_text(_credentials("replication", s3_server))
    _copies(_store(s3_server, profile="replication", credentials_file=str(elsewhere)), make_bucket)


def test_a_store_without_keys_uses_the_default_chain(
    s3_server: S3ServerLike, make_bucket: Callable[[str], str], aws_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    _copies(_store(s3_server), make_bucket)


def test_a_profile_nowhere_in_the_aws_files_is_refused_by_name(s3_server: S3ServerLike, aws_home: Path) -> None:
    (aws_home / ".aws" / "credentials").write_text(_credentials("mirror", s3_server))
    with pytest.raises(StorageConfigError, match=r"store 'minio'.*profile 'mirorr'.*not found") as info:
        _store(s3_server, profile="mirorr")
    assert "\n" not in str(info.value)


def test_a_store_without_keys_where_the_chain_finds_none_is_refused(s3_server: S3ServerLike, aws_home: Path) -> None:
    with pytest.raises(StorageConfigError, match=r"store 'minio'.*no credentials.*default chain") as info:
        _store(s3_server)
    assert "\n" not in str(info.value)
