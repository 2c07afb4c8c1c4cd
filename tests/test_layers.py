"""The package's layers point down: foundation -> replication -> wings -> entry points.

Every ``import`` of the package (module level or inside a function) is read from the source, so an upward or
sideways import fails here before it can tangle the rooms. The engine and everything below it stay free of
Dagster and Spark, and the development environment (a distribution of its own) is reached only by the demo and
the CLI's ``devenv``/``demo`` commands.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = "lakefs_mirror_dagster"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

#: Room -> layer. A room may import rooms of lower layers only; rooms of one layer never import each other.
LAYERS: dict[str, int] = {
    "errors": 0,
    # The request timing hooks the lakeFS client and the stores call (metrics listens to them).
    "observe": 0,
    "config": 1,
    "logs": 2,
    "graveler": 2,
    "storage": 2,
    "lakefs": 2,
    "mirrors": 2,
    "replication": 3,
    "refs": 4,
    "progress_display": 4,  # the CLI's live display of the engine's progress
    "metrics": 4,  # Prometheus metrics of sync and serve, fed by the engine's hooks
    "spark": 5,
    "service": 5,
    "orchestration": 6,
    "demo": 7,
    # The ``dg`` registry module (entry point ``dagster_dg_cli.registry_modules``): the Components, re-exported.
    "components": 7,
    # The command line's habits (exit codes, global options, --yes, tables, completion): only cli.py uses them.
    "command_line": 7,
    "cli": 8,
    "__init__": 9,
    # The version string the top-level package defines (``lakefs-mirror --version`` reads it when the
    # distribution's metadata is not installed): data, not code of the layer above.
    "__version__": 0,
}
#: Rooms that may import the orchestration and compute frameworks (the wings and the entry points above them).
FRAMEWORK_ROOMS = {
    "dagster": {"orchestration", "components", "demo", "cli"},
    "pyspark": {"spark", "orchestration", "demo", "cli"},
    # The engine reports through hooks (observe, ReplicationService.on_synced); only metrics/ knows Prometheus.
    "prometheus_client": {"metrics"},
}
DEVENV = "lakefs_mirror_devenv"
DEVENV_ROOMS = {"demo", "cli"}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        yield ".".join(parts), path


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """Absolute names of everything ``module`` imports, with line numbers."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                if node.module:
                    yield ".".join([*base, node.module]), node.lineno
                else:  # ``from . import a, b``: each name is a submodule or an attribute of the package
                    for alias in node.names:
                        yield ".".join([*base, alias.name]), node.lineno
            else:
                yield node.module or "", node.lineno


def test_every_room_has_a_layer() -> None:
    rooms = {_room(module) for module, _ in _modules()}
    assert rooms <= set(LAYERS), f"rooms without a layer in this test: {sorted(rooms - set(LAYERS))}"


def test_imports_point_down() -> None:
    problems = []
    for module, path in _modules():
        room = _room(module)
        for target, line in _imports(module, path):
            if not target.startswith(PACKAGE + ".") and target != PACKAGE:
                continue
            other = _room(target)
            if other != room and LAYERS[other] >= LAYERS[room]:
                problems.append(f"{path.relative_to(ROOT.parent)}:{line}: {room} imports {target} ({other})")
    assert not problems, "imports that do not point down:\n" + "\n".join(problems)


@pytest.mark.parametrize("framework", sorted(FRAMEWORK_ROOMS))
def test_frameworks_stay_in_the_wings(framework: str) -> None:
    allowed = FRAMEWORK_ROOMS[framework]
    found = [
        f"{path.relative_to(ROOT.parent)}:{line}"
        for module, path in _modules()
        if _room(module) not in allowed
        for target, line in _imports(module, path)
        if target == framework or target.startswith(framework + ".") or target.startswith(framework + "_")
    ]
    assert not found, f"{framework} imported outside {sorted(allowed)}: {found}"


def test_development_environment_is_not_a_runtime_dependency() -> None:
    found = [
        f"{path.relative_to(ROOT.parent)}:{line}"
        for module, path in _modules()
        if _room(module) not in DEVENV_ROOMS
        for target, line in _imports(module, path)
        if target.split(".")[0] == DEVENV
    ]
    assert not found, f"{DEVENV} imported by runtime modules: {found}"
    assert not (ROOT / "devenv").exists(), "devenv/ must not ship inside the runtime package"


def test_this_test_sees_a_violation(tmp_path: Path) -> None:
    """The import reader resolves relative imports: an engine module importing the Dagster wing is caught."""
    bad = tmp_path / "engine.py"
    bad.write_text("from ..orchestration.mirroring import branch_heads\nimport dagster\n")
    found = list(_imports(f"{PACKAGE}.replication.engine", bad))
    assert (f"{PACKAGE}.orchestration.mirroring", 1) in found and ("dagster", 2) in found
    assert LAYERS[_room(found[0][0])] > LAYERS["replication"]
