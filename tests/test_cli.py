"""The command line as a user types it: `sst cat` on lakeFS's own files, clear errors on bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from lakefs_mirror_dagster.cli import ExitCode, main
from lakefs_mirror_dagster.config import dump_example_config
from tests.cli_process import run_cli
from tests.config.config_data import minimal
from tests.graveler.sstable_writer import encode_entry, write_lakefs_file
from tests.shared_fixtures import SSTABLE_FIXTURES

FIXTURES = SSTABLE_FIXTURES
RANGE_ID = "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e"


def test_sst_cat_prints_records_and_recomputed_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sst", "cat", str(FIXTURES / "range.sst"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["type"] == "ranges" and doc["range_id"] == RANGE_ID
    assert [r["key"] for r in doc["records"]] == ["a/b/c/no", "a/b/c/yes"]
    assert main(["sst", "cat", str(FIXTURES / "metarange.sst")]) == 0
    assert RANGE_ID in capsys.readouterr().out


def test_sst_cat_on_a_corrupt_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.sst"
    data = bytearray((FIXTURES / "range.sst").read_bytes())
    data[100] ^= 0xFF
    bad.write_bytes(bytes(data))
    assert main(["sst", "cat", str(bad)]) == 2
    assert "checksum" in capsys.readouterr().err.lower()


def test_bad_config_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("region: r1\norganization_id: o\nregional_endpoint: http://127.0.0.1:1\nlistn_address: x\n")
    assert main(["--config", str(cfg), "sync", "--once"]) == ExitCode.CONFIG
    assert "listn_address" in capsys.readouterr().err


def _corrupt_record_file(path: Path) -> list[str]:
    bad_entry = encode_entry("data/x", 5) + b"\x0a\x7f"  # the address's length runs past the message
    path.write_bytes(write_lakefs_file([(b"a", bytes(32), bad_entry)]).data)
    return ["sst", "cat", str(path)]


def _bad_config_value(path: Path) -> list[str]:
    path.write_text("region: r1\norganization_id: o\nregional_endpoint: ftp://127.0.0.1:1\n")
    return ["--config", str(path), "sync", "--once"]


def _missing_file(path: Path) -> list[str]:
    return ["sst", "cat", str(path)]


def _bad_policies_file(path: Path) -> list[str]:
    path.mkdir()
    (path / "c.yaml").write_text(dump_example_config())
    (path / "c.yaml").chmod(0o600)
    (path / "policies.yaml").write_text("policies: {not: a list}\n")
    return ["--config", str(path / "c.yaml"), "serve", "--policies", str(path / "policies.yaml")]


@pytest.mark.parametrize(
    ("command", "expected", "code"),
    [
        (_corrupt_record_file, "record b'a': catalog.Entry: field 1 overruns", ExitCode.USAGE),
        (_bad_config_value, "lakefs-mirror: config: regional_endpoint: 'ftp://127.0.0.1:1'", ExitCode.CONFIG),
        (_missing_file, "No such file", ExitCode.USAGE),
        (_bad_policies_file, "expected a mapping with a 'policies' list", ExitCode.CONFIG),
    ],
    ids=["corrupt-record", "bad-config-value", "missing-file", "bad-policies-file"],
)
def test_expected_failure_is_one_line_and_its_status(
    tmp_path: Path, command: Callable[[Path], list[str]], expected: str, code: int
) -> None:
    done = run_cli(*command(tmp_path / "input"), cwd=tmp_path)
    assert done.returncode == code
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lakefs-mirror: ") and expected in line


def _gc_config(tmp_path: Path, **fields: object) -> str:
    data = minimal(mirrors_database={"type": "sqlite", "sqlite": {"path": str(tmp_path / "m.db")}}, **fields)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return str(path)


def test_gc_of_an_unknown_mirror_or_with_a_bad_grace_period_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", _gc_config(tmp_path), "gc", "--mirror", "nope", "--dry-run"]) == 2
    assert "no mirror with the name or id 'nope' in region us-east-1" in capsys.readouterr().err
    bad = _gc_config(tmp_path, garbage_collection={"grace_period": "-1h"})
    assert main(["--config", bad, "gc", "--yes"]) == ExitCode.CONFIG
    assert "garbage_collection.grace_period" in capsys.readouterr().err


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"lakefs-mirror {version('lakefs-mirror-dagster')}\n"


def test_version_falls_back_to_the_package_when_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    import lakefs_mirror_dagster
    from lakefs_mirror_dagster import cli

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    monkeypatch.setattr(lakefs_mirror_dagster, "__version__", "9.9.9-source")
    assert cli.version() == "9.9.9-source"
