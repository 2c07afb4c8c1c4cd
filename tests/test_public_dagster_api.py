"""The package uses Dagster's public API only, so a user's Dagster release is theirs to choose within our range.

One module may reach inside: the opt-in fork run launcher (``orchestration/launcher.py``), which an operator turns on
in ``dagster.yaml`` and which says so in its docstring."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lakefs_mirror_dagster"
OPT_IN = {"orchestration/launcher.py"}


def _private_dagster_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.level == 0
            else []
        )
        found += [n for n in names if n.split(".")[0].startswith("dagster") and "._" in f".{n}"]
    return found


def test_the_detector_sees_private_imports_at_any_depth() -> None:
    code = "import dagster as dg\nfrom dagster._core.x import y\ndef f():\n    import dagster_graphql._z\n"
    assert _private_dagster_imports(code) == ["dagster._core.x", "dagster_graphql._z"]
    assert _private_dagster_imports("from dagster.components import DefsStateConfig") == []


def test_no_private_dagster_import_outside_the_opt_in_launcher() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): names
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in OPT_IN
        and (names := _private_dagster_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}
