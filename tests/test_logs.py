"""``logging.level`` and ``logging.format`` as an operator sees them: JSON lines a log shipper can parse, or
plain text, at the configured level, with the mirror a record is about, and never a secret."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable

import pytest

from lakefs_mirror_dagster.config import LoggingConfig, Secret
from lakefs_mirror_dagster.logs import configure_logging, log_fields

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
log = logging.getLogger("lakefs_mirror_dagster.replication.engine")


def _emit(settings: LoggingConfig, emit: Callable[[], None]) -> list[str]:
    out = io.StringIO()
    configure_logging(settings, stream=out)
    emit()
    return out.getvalue().splitlines()


def test_json_lines_carry_level_logger_message_and_the_mirror() -> None:
    fields = log_fields(region="us-west-2", mirror="sales-west", repository="sales", branch="main", commit="abc123")
    [line] = _emit(LoggingConfig(format="json"), lambda: log.info("branch %s: %s", "main", "advanced", extra=fields))
    doc = json.loads(line)
    assert doc.pop("time").endswith("Z")
    assert doc == {
        "level": "INFO",
        "logger": "lakefs_mirror_dagster.replication.engine",
        "message": "branch main: advanced",
        "region": "us-west-2",
        "mirror": "sales-west",
        "repository": "sales",
        "branch": "main",
        "commit": "abc123",
    }


def test_json_exception_is_one_line_with_the_traceback() -> None:
    def emit() -> None:
        try:
            raise ValueError("range abc is missing")
        except ValueError:
            log.exception("syncing failed", extra=log_fields(mirror="m"))

    [line] = _emit(LoggingConfig(format="json"), emit)
    doc = json.loads(line)
    assert doc["level"] == "ERROR" and doc["mirror"] == "m"
    assert "Traceback" in doc["exception"] and "ValueError: range abc is missing" in doc["exception"]


def test_text_is_one_readable_line_with_the_context() -> None:
    [line] = _emit(LoggingConfig(), lambda: log.warning("blocked", extra=log_fields(mirror="m", repository="r")))
    assert line.endswith(" WARNING lakefs_mirror_dagster.replication.engine: blocked [mirror=m repository=r]")
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_secret_in_args_context_or_extra_never_appears(fmt: str) -> None:
    class Config:  # an object a careless caller might attach: not dumped
        password = SECRET

        def __repr__(self) -> str:
            return f"Config(password={SECRET})"

    def emit() -> None:
        log.error("credential check with %s failed", Secret(SECRET), extra={"mirror": Secret(SECRET), "cfg": Config()})

    [line] = _emit(LoggingConfig(format=fmt), emit)  # type: ignore[arg-type]
    assert SECRET not in line
    assert "credential check with ********** failed" in line


@pytest.mark.parametrize(("level", "shown"), [("DEBUG", 3), ("INFO", 2), ("WARN", 1), ("ERROR", 0)])
def test_level_applies_to_the_whole_package_tree(level: str, shown: int) -> None:
    deep = logging.getLogger("lakefs_mirror_dagster.storage.s3")

    def emit() -> None:
        deep.debug("d")
        deep.info("i")
        deep.warning("w")

    assert len(_emit(LoggingConfig(level=level), emit)) == shown  # type: ignore[arg-type]


def test_configuring_again_replaces_the_handler_and_leaves_other_loggers_alone() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging(LoggingConfig(format="json"), stream=first)
    configure_logging(LoggingConfig(format="text"), stream=second)
    log.info("once")
    logging.getLogger("uvicorn.error").info("not ours")
    assert first.getvalue() == ""
    assert second.getvalue().count("\n") == 1 and "once" in second.getvalue()
