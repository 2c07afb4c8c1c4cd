"""The configuration reference (docs/configuration.md) names every key the config accepts, so none is undocumented."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from lakefs_mirror_dagster.config import ReplicationConfig

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
#: Sections documented as a whole: lakeFS's own store settings, and maps keyed by region.
WHOLE = {"blockstore", "blockstores", "region_credentials", "source_stores", "dst_endpoints"}


def config_keys(cls: type, prefix: str = "") -> set[str]:
    """Dotted keys of ``cls``, descending into sections (dataclasses) except those documented whole."""
    keys: set[str] = set()
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        key = prefix + field.name
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind) and key not in WHOLE:
            keys |= config_keys(kind, key + ".")  # type: ignore[arg-type]
        else:
            keys.add(key)
    return keys


def table_keys() -> set[str]:
    text = REFERENCE.read_text(encoding="utf-8")
    section = text.split("## Every configuration key", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {key for row in rows for key in re.findall(r"`([a-z_.]+)`", row.split("|")[1])}


def test_every_config_key_is_in_the_reference_table() -> None:
    documented = table_keys()
    missing = config_keys(ReplicationConfig) - documented
    assert not missing, f"docs/configuration.md '## Every configuration key' lacks: {sorted(missing)}"
    unknown = documented - config_keys(ReplicationConfig)
    assert not unknown, f"docs/configuration.md's table names keys the config does not have: {sorted(unknown)}"
