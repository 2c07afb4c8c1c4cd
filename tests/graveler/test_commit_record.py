"""lakeFS's commit record bytes: what ``encode_commit_data`` writes, ``decode_commit_data`` reads back whole
(the integration test ``tests/replication/test_log_order.py`` shows lakeFS reading them and that a record lakeFS
wrote itself re-encodes to the same bytes)."""

from __future__ import annotations

import pytest

from lakefs_mirror_dagster.graveler import CommitData, ProtoError, decode_commit_data
from lakefs_mirror_dagster.graveler.commit_record import (
    commit_key,
    encode_commit_data,
    repository_partition,
    repository_record,
)
from lakefs_mirror_dagster.replication.refstore import DEFAULT_TABLE, _split_table


def _commit(**changes: object) -> CommitData:
    fields: dict[str, object] = {
        "id": "c" * 64,
        "committer": "admin",
        "message": "merge ✓",
        "creation_date_seconds": 1_764_280_000,
        "creation_date_nanos": 123_456_789,
        "meta_range_id": "m" * 64,
        "metadata": {"b": "2", "a": "1"},
        "parents": ("p1", "p2"),
        "version": 1,
        "generation": 7,
    }
    fields.update(changes)
    return CommitData(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "commit",
    [
        _commit(),
        _commit(creation_date_nanos=0, metadata={}, parents=(), generation=0, version=0, meta_range_id=""),
        _commit(generation=-1),  # int32 negatives are ten-byte varints in protobuf
    ],
)
def test_a_record_reads_back_as_written(commit: CommitData) -> None:
    assert decode_commit_data(encode_commit_data(commit)) == commit


def test_the_sub_second_time_is_kept() -> None:
    back = decode_commit_data(encode_commit_data(_commit(creation_date_nanos=999_999_999)))
    assert (back.creation_date_seconds, back.creation_date_nanos) == (1_764_280_000, 999_999_999)


def test_keys_and_partition_are_lakefs_layout() -> None:
    assert commit_key("abc") == "commits/abc"
    assert repository_partition("repo", "uid123") == "repo-uid123"


def test_a_repository_record_without_instance_uid_is_refused() -> None:
    with pytest.raises(ProtoError, match="instance_uid"):
        repository_record(b"\x0a\x04repo")


@pytest.mark.parametrize(
    ("given", "conninfo", "table"),
    [
        ("postgres://u:p@h:5432/db?sslmode=disable", "postgres://u:p@h:5432/db?sslmode=disable", DEFAULT_TABLE),
        ("postgres://u:p@h/db?lakefskv_table=kv2&sslmode=disable", "postgres://u:p@h/db?sslmode=disable", "kv2"),
        ("host=h dbname=db lakefskv_table=other", "host=h dbname=db", "other"),
    ],
)
def test_lakefs_table_parameter_is_taken_out_of_the_connection_string(given: str, conninfo: str, table: str) -> None:
    assert _split_table(given) == (conninfo, table)
