"""``transfer.concurrency``: ``auto`` by default (copies in flight follow the link), or exactly a whole number >= 1;
anything else refused naming the field, from the file or from ``REPLICATION_TRANSFER_CONCURRENCY``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakefs_mirror_dagster.config import AUTO, ConfigError, load_config, parse_config
from lakefs_mirror_dagster.replication import EngineSettings
from lakefs_mirror_dagster.replication.in_process import InProcessTransferer
from lakefs_mirror_dagster.spark.transfer import TransferTarget
from lakefs_mirror_dagster.storage import AUTO_CAP, AUTO_START, LocalBlockstore, fixed_workers
from tests.config.config_data import error_of, minimal, write_yaml


def test_the_default_is_auto_and_auto_may_be_written_in_any_case() -> None:
    assert parse_config(minimal()).transfer.concurrency == AUTO == "auto"
    for spelling in ("auto", "AUTO", " Auto "):
        assert parse_config(minimal(transfer={"concurrency": spelling})).transfer.concurrency == AUTO


@pytest.mark.parametrize(("value", "expected"), [(1, 1), (16, 16), (64, 64), ("32", 32), (" 8 ", 8)])
def test_a_whole_number_is_kept_as_it_is(value: Any, expected: int) -> None:
    assert parse_config(minimal(transfer={"concurrency": value})).transfer.concurrency == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "must be at least 1 copy in flight, or 'auto', got 0"),
        (-4, "must be at least 1 copy in flight, or 'auto', got -4"),
        ("fast", "expected a whole number (copies in flight, at least 1) or 'auto', got 'fast'"),
        ("16x", "expected a whole number (copies in flight, at least 1) or 'auto', got '16x'"),
        (2.5, "expected a whole number (copies in flight, at least 1) or 'auto', got 2.5"),
        (True, "expected a whole number (copies in flight, at least 1) or 'auto', got true"),
        ([16], "expected a whole number (copies in flight, at least 1) or 'auto', got [16]"),
    ],
)
def test_anything_else_is_refused_in_one_line_naming_the_field(value: Any, message: str) -> None:
    err = error_of(minimal(transfer={"concurrency": value}))
    assert err.path == "transfer.concurrency"
    assert str(err).splitlines()[0] == f"transfer.concurrency: {message}"


def test_the_environment_sets_it_and_a_bad_value_there_names_the_variable(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "replication.yaml",
        """\
        region: us-east-1
        organization_id: o
        regional_endpoint: http://lakefs:8000
        blockstore: {type: local}
        auth: {encrypt: {secret_key: k}}
        lakefs: {access_key_id: a, secret_access_key: s}
        transfer: {concurrency: 8}
        """,
    )
    assert load_config(path, env={}).transfer.concurrency == 8
    assert load_config(path, env={"REPLICATION_TRANSFER_CONCURRENCY": "auto"}).transfer.concurrency == AUTO
    assert load_config(path, env={"REPLICATION_TRANSFER_CONCURRENCY": "24"}).transfer.concurrency == 24
    with pytest.raises(ConfigError) as bad:
        load_config(path, env={"REPLICATION_TRANSFER_CONCURRENCY": "many"})
    assert bad.value.path == "transfer.concurrency"
    assert "from environment variable REPLICATION_TRANSFER_CONCURRENCY" in str(bad.value)


@pytest.mark.parametrize(("value", "start", "cap"), [("auto", AUTO_START, AUTO_CAP), (64, 64, 64), (1, 1, 1)])
def test_the_engines_copy_pool_gets_it(tmp_path: Path, value: Any, start: int, cap: int) -> None:
    """What the engine builds from the config: ``auto`` from 16 up to 128; a number exactly, as its only value."""
    settings = EngineSettings.from_config(parse_config(minimal(transfer={"concurrency": value})))
    transferer = InProcessTransferer(None, LocalBlockstore(root=tmp_path), "local://ns", settings)  # type: ignore[arg-type]
    figures = transferer.take_in_flight()
    assert (figures.limit, figures.auto, figures.peak) == (start, value == "auto", 0)
    assert transferer._pool.in_flight.cap == cap


def test_work_beside_the_copies_runs_on_16_threads_for_auto_and_on_the_number_otherwise() -> None:
    """Garbage collection's HEADs and deletions, metadata HEADs and scrub's reads measure no round trip."""
    assert fixed_workers(AUTO) == 16 and fixed_workers(5) == 5


def test_spark_tasks_follow_the_link_each_on_its_own_reads_by_default() -> None:
    assert TransferTarget("repo", "s3://a/ns", "s3://b/ns").concurrency == AUTO
