"""What only the DynamoDB mirrors database has to get right: its table, its configuration errors, and a delete
interrupted between the mirror's removal and its cleanup. The contract every store shares is tested in
``test_mirror_store.py`` and ``test_mirrors_concurrency.py``, on DynamoDB Local too."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import boto3
import pytest

from lakefs_mirror_dagster.config.database import DynamoDBSettings, MirrorsDatabaseConfig
from lakefs_mirror_dagster.mirrors import (
    MirrorNotFound,
    MirrorsDatabaseError,
    MirrorsDatabaseUnavailable,
    open_mirrors_database,
)
from lakefs_mirror_dagster.mirrors.dynamodb import DynamoMirrorStore


def spec(**overrides: Any) -> dict[str, Any]:
    return {
        "organization_id": "acme",
        "source_region": "us-east-1",
        "source_repository": "sales",
        "name": "sales-mirror",
        "destination_region": "us-west-2",
        "storage_namespace": "s3://west-bucket/sales-mirror",
        **overrides,
    }


def client_for(settings: DynamoDBSettings) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=settings.endpoint,
        region_name=settings.aws_region,
        aws_access_key_id=settings.aws_access_key_id,
        aws_secret_access_key=settings.aws_secret_access_key.reveal(),
    )


def test_the_table_is_created_on_start_ready_for_a_global_table(dynamodb_settings: DynamoDBSettings) -> None:
    config = MirrorsDatabaseConfig(type="dynamodb", dynamodb=dynamodb_settings)
    with (
        open_mirrors_database(config, create_tables=False) as unopened,
        pytest.raises(MirrorsDatabaseUnavailable, match=dynamodb_settings.table_name),
    ):
        unopened.get_mirror("any")  # not created when told not to: the database is not there, as if down
    with open_mirrors_database(config) as store:
        mirror = store.create_mirror(**spec())
        assert dynamodb_settings.table_name in store.url
        assert dynamodb_settings.aws_secret_access_key.reveal() not in store.url + repr(store)
    table = client_for(dynamodb_settings).describe_table(TableName=dynamodb_settings.table_name)["Table"]
    assert table["TableStatus"] == "ACTIVE" and table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    with open_mirrors_database(config) as again:  # an existing table is used as it is
        assert again.get_mirror(mirror.id) == mirror


def test_a_table_of_another_shape_is_refused_by_name(dynamodb_settings: DynamoDBSettings) -> None:
    client_for(dynamodb_settings).create_table(
        TableName=dynamodb_settings.table_name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    with pytest.raises(MirrorsDatabaseError, match="another key schema") as info:
        DynamoMirrorStore(dynamodb_settings)
    assert dynamodb_settings.table_name in str(info.value) and "table_name" in str(info.value)


def test_no_aws_region_anywhere_is_a_clear_error(
    dynamodb_settings: DynamoDBSettings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    with pytest.raises(MirrorsDatabaseError, match=r"mirrors_database\.dynamodb\.aws_region"):
        DynamoMirrorStore(dataclasses.replace(dynamodb_settings, aws_region=""))
    with pytest.raises(MirrorsDatabaseError, match="aws_profile"):
        DynamoMirrorStore(dataclasses.replace(dynamodb_settings, aws_profile="nobody", aws_access_key_id=""))


def test_a_delete_interrupted_before_its_cleanup_never_leaks_into_the_next_mirror(
    dynamodb_settings: DynamoDBSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror is gone once its record is deleted; its branches and the namespace's validated ranges are
    removed after. If the process dies in between, the next mirror on that namespace must not trust the
    old ranges (they may have been deleted with the old repository)."""
    store = DynamoMirrorStore(dynamodb_settings)
    try:
        old = store.create_mirror(**spec())
        store.record_branch(old.id, "main", source_commit_id="c1")
        store.mark_ranges_validated(old.validation_namespace, {"r1": "f1", "r2": "f2"})

        def crash(self: DynamoMirrorStore, claim: Any) -> None:
            raise KeyboardInterrupt("process killed")

        monkeypatch.setattr(DynamoMirrorStore, "_release_namespace", crash)
        with pytest.raises(KeyboardInterrupt):
            store.delete_mirror(old.id)
        monkeypatch.undo()
        with pytest.raises(MirrorNotFound):
            store.get_mirror(old.id)
        assert store.validated_count(old.validation_namespace) == 2  # left behind by the interrupted delete

        new = store.create_mirror(**spec(name="sales-mirror-2"))  # same namespace
        assert new.validation_namespace == old.validation_namespace
        assert store.validated_count(new.validation_namespace) == 0
        assert store.get_branch(old.id, "main") is None
    finally:
        store.close()
