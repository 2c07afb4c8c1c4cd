"""A feature whose pip extra is not installed fails with one clear line naming the extra to install.

The test venv has every extra, so absence is simulated: ``sys.modules[name] = None`` makes ``import name`` raise
``ModuleNotFoundError`` as an uninstalled package does, and the package's modules that import it are dropped from
``sys.modules`` so they are imported again (monkeypatch puts everything back afterwards)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lakefs_mirror_dagster.errors import MissingExtraError, needs_extra


def _uninstall(monkeypatch: pytest.MonkeyPatch, *missing: str, reimported: str = "") -> None:
    """``missing`` modules (and their submodules) look uninstalled; ``reimported`` (a package prefix of ours) is
    imported afresh."""
    dropped = [*missing, *([reimported] if reimported else [])]
    for name in list(sys.modules):
        if any(name == m or name.startswith(m + ".") for m in dropped):
            monkeypatch.delitem(sys.modules, name)
    for name in missing:
        monkeypatch.setitem(sys.modules, name, None)


def _names_extra(exc: pytest.ExceptionInfo[MissingExtraError], extra: str) -> None:
    assert f"pip install 'lakefs-mirror-dagster[{extra}]'" in str(exc.value)
    assert exc.value.extra == extra


def test_a_gs_store_without_google_cloud_names_the_gcs_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from lakefs_mirror_dagster.storage import build_blockstore

    _uninstall(monkeypatch, "google", reimported="lakefs_mirror_dagster.storage.gcs")
    with pytest.raises(MissingExtraError) as exc:
        build_blockstore({"id": "lake", "type": "gs", "gs": {"endpoint": "http://127.0.0.1:9"}})
    _names_extra(exc, "gcs")
    assert "store 'lake' (type gs)" in str(exc.value)


def test_an_azure_store_without_the_sdk_names_the_azure_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from lakefs_mirror_dagster.storage import build_blockstore

    _uninstall(monkeypatch, "azure", reimported="lakefs_mirror_dagster.storage.azure")
    with pytest.raises(MissingExtraError) as exc:
        build_blockstore({"type": "azure", "azure": {"storage_account": "acct", "storage_access_key": "a2V5"}})
    _names_extra(exc, "azure")


def test_a_postgres_mirrors_database_without_psycopg_names_the_postgres_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lakefs_mirror_dagster.config.database import postgres_url
    from lakefs_mirror_dagster.mirrors.sql.engine import make_engine

    _uninstall(monkeypatch, "psycopg", "psycopg_binary")
    with pytest.raises(MissingExtraError) as exc:
        make_engine("postgresql://mirror:secret@127.0.0.1:5/mirrors", busy_timeout_s=1, echo=False)
    _names_extra(exc, "postgres")
    assert "secret" not in str(exc.value)
    with pytest.raises(MissingExtraError) as exc:  # the key=value form psycopg parses
        postgres_url("host=127.0.0.1 dbname=mirrors")
    _names_extra(exc, "postgres")


def test_serve_and_openapi_without_fastapi_name_the_service_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lakefs_mirror_dagster.cli import main

    _uninstall(monkeypatch, "fastapi", "uvicorn", reimported="lakefs_mirror_dagster.service")
    assert main(["dev", "openapi", str(tmp_path / "openapi.json")]) == 2
    err = capsys.readouterr().err
    assert "pip install 'lakefs-mirror-dagster[service]'" in err and err.count("\n") == 1, err
    assert not (tmp_path / "openapi.json").exists()


def test_spark_without_pyspark_names_the_spark_extra_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from lakefs_mirror_dagster.spark.session import LazySparkSession, prepare_python_workers

    _uninstall(monkeypatch, "pyspark")
    with pytest.raises(MissingExtraError) as exc:
        LazySparkSession({"spark.master": "local[1]"})
    _names_extra(exc, "spark")
    with pytest.raises(MissingExtraError) as exc:  # the Dagster Spark resource's first step
        prepare_python_workers()
    _names_extra(exc, "spark")


def test_the_dagster_spark_resource_without_dagster_pyspark_names_the_spark_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lakefs_mirror_dagster.orchestration.mirroring.spark import SparkValidatorResource

    _uninstall(monkeypatch, "dagster_pyspark")
    with pytest.raises(MissingExtraError) as exc:
        SparkValidatorResource(spark_config={"spark.master": "local[1]"}).session()
    _names_extra(exc, "spark")


def test_only_a_module_of_the_extra_is_reported_as_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _uninstall(monkeypatch, "not_an_extra_module")
    with pytest.raises(ModuleNotFoundError) as exc, needs_extra("gcs", "a gs store"):
        import not_an_extra_module  # noqa: F401
    assert not isinstance(exc.value, MissingExtraError)
