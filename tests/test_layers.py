"""The package's layers point down: foundation -> engine (replication) -> region -> wings -> entry points.

Every ``import`` of the package (module level or inside a function) is read from the source, so an upward or
sideways import, an import circle (inside a room too) or a reach past a room's public module fails here before
it can tangle the rooms. The engine stays free of Dagster and Spark; the dev environment (a distribution of its
own, which holds the demo) is reached only by the CLI's ``dev`` commands, through a lazy import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

PACKAGE = "lakefs_mirror_dagster"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

#: Room -> layer. A room may import rooms of lower layers only; rooms of one layer never import each other.
LAYERS: dict[str, int] = {
    "errors": 0,
    # The request timing hooks the lakeFS client and the stores call (metrics listens to them).
    "observe": 0,
    # The one retry schedule (exponential backoff with full jitter): every room that waits to try again uses it.
    "backoff": 0,
    "config": 1,
    "logs": 2,
    "graveler": 2,
    "storage": 2,
    "lakefs": 2,
    "mirrors": 2,
    # The one-mirror engine: plan, transfer, validate, promote.
    "replication": 3,
    # The region's service around the engine: its mirrors, passes, retry schedule, hooks, status, scrub, GC.
    "region": 4,
    "refs": 5,
    "metrics": 5,  # Prometheus metrics of sync and serve, fed by the engine's hooks
    "spark": 6,
    "service": 6,
    "orchestration": 7,
    # The ``dg`` registry module (entry point ``dagster_dg_cli.registry_modules``): the Components, re-exported.
    "components": 8,
    # The command line: parser, commands, output, its habits and sync's live display.
    "cli": 9,
    "__init__": 10,
    # The version string the top-level package defines (``lakefs-mirror --version`` reads it when the
    # distribution's metadata is not installed): data, not code of the layer above.
    "__version__": 0,
}
#: Rooms that may import the orchestration and compute frameworks (the wings and the entry points above them).
FRAMEWORK_ROOMS = {
    "dagster": {"orchestration", "components", "cli"},
    "pyspark": {"spark", "orchestration", "cli"},
    # The engine reports through hooks (observe, ReplicationService.on_synced); only metrics/ knows Prometheus.
    "prometheus_client": {"metrics"},
}
DEVENV = "lakefs_mirror_devenv"
#: The one module of the runtime package that may import the dev distribution, and only inside a function.
DEVENV_IMPORTER = f"{PACKAGE}.cli.dev"
DEVENV_ROOT = ROOT.parent / "devenv" / DEVENV


def _modules(root: Path = ROOT) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        yield ".".join(parts), path


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _import_froms(module: str, path: Path) -> Iterator[tuple[str, list[str], int, bool]]:
    """Every ``from X import a, b`` of ``module`` as (absolute X, [a, b], line, whether X is only a package the
    names are taken from, as in ``from . import a``); ``import X`` as (X, [], line, False)."""
    package = module.rsplit(".", 1)[0]  # a package's ``__init__`` module is named ``package.__init__``
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno, False
        elif isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                yield ".".join([*base, node.module] if node.module else base), names, node.lineno, not node.module
            else:
                yield node.module or "", names, node.lineno, False


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """Absolute names of everything ``module`` imports, with line numbers."""
    for target, names, line, bare in _import_froms(module, path):
        if bare:  # ``from . import a, b``: each name is a submodule or an attribute of the package
            yield from ((f"{target}.{name}", line) for name in names)
        else:
            yield target, line


def _public_names(root: Path = ROOT) -> dict[str, set[str]]:
    """Each room's public module (the package's ``__init__``) and the names its ``__all__`` exports."""
    exports: dict[str, set[str]] = {}
    for init in sorted(root.glob("*/__init__.py")):
        for node in ast.parse(init.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
                exports[f"{root.name}.{init.parent.name}"] = set(ast.literal_eval(node.value))
    return exports


def _graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from P import m``: ``P.m`` when it is a module, else ``P``);
    a package stands for its ``__init__``. Importing a submodule runs its parent packages first, but that is
    Python's order, not an arrow between the modules, so it is not an edge."""
    modules = {module.removesuffix(".__init__"): path for module, path in _modules(root)}
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        real = module + ".__init__" if path.name == "__init__.py" else module
        for target, names, _, _ in _import_froms(real, path):
            submodules = {f"{target}.{n}" for n in names} & modules.keys()
            attributes = len(submodules) < len(names) or not names
            for name in submodules | ({target} if attributes and target in modules else set()):
                if name != module:
                    graph[module].add(name)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _bypasses(modules: Iterable[tuple[str, Path]], exports: dict[str, set[str]]) -> list[str]:
    """Imports of a name from another room's private module while that room's public module exports it."""
    problems = []
    for module, path in modules:
        for target, names, line, _ in _import_froms(module, path):
            parts = target.split(".")
            if len(parts) < 3 or parts[1] == _room(module):
                continue
            public = ".".join(parts[:2])
            bypassing = sorted(set(names) & exports.get(public, set()))
            if bypassing:
                problems.append(f"{path}:{line}: {', '.join(bypassing)} from {target}, not from {public}")
    return problems


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


def _function_level_lines(path: Path) -> set[int]:
    """Lines of the imports inside a function's body (run when it is called, not when the module loads)."""
    lines = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines |= {n.lineno for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)}
    return lines


def _devenv_imports(modules: Iterable[tuple[str, Path]]) -> list[str]:
    """Imports of the dev distribution anywhere but a function of ``DEVENV_IMPORTER``."""
    found = []
    for module, path in modules:
        lazy = _function_level_lines(path) if module == DEVENV_IMPORTER else set()
        for target, line in _imports(module, path):
            if target.split(".")[0] == DEVENV and line not in lazy:
                found.append(f"{path.name}:{line}: {module} imports {target}")
    return found


def test_development_environment_is_not_a_runtime_dependency() -> None:
    """The dev distribution depends on the runtime, never the other way round: only the ``dev`` commands reach
    it, lazily (one line says how to get it when it is missing), and it does not ship inside the package."""
    found = _devenv_imports(_modules())
    assert not found, f"{DEVENV} imported by runtime modules outside {DEVENV_IMPORTER}'s functions: {found}"
    assert not (ROOT / "devenv").exists(), "devenv/ must not ship inside the runtime package"
    assert not (ROOT / "demo").exists(), "the demo lives in the dev distribution, not in the runtime package"


def test_this_test_sees_a_devenv_import(tmp_path: Path) -> None:
    """A module-level import of the dev distribution is caught, in ``cli/dev.py`` too; a lazy one there is not."""
    lazy, eager = tmp_path / "dev.py", tmp_path / "sync.py"
    lazy.write_text("import os\n\n\ndef f() -> None:\n    import lakefs_mirror_devenv\n")
    eager.write_text("from lakefs_mirror_devenv.demo.run import run_demo\n")
    assert _devenv_imports([(DEVENV_IMPORTER, lazy)]) == []
    assert len(_devenv_imports([(DEVENV_IMPORTER, eager), (f"{PACKAGE}.cli.sync", eager)])) == 2


def test_this_test_sees_a_violation(tmp_path: Path) -> None:
    """The import reader resolves relative imports: an engine module importing the Dagster wing is caught."""
    bad = tmp_path / "engine.py"
    bad.write_text("from ..orchestration.mirroring import branch_heads\nimport dagster\n")
    found = list(_imports(f"{PACKAGE}.replication.engine", bad))
    assert (f"{PACKAGE}.orchestration.mirroring", 1) in found and ("dagster", 2) in found
    assert LAYERS[_room(found[0][0])] > LAYERS["replication"]


@pytest.mark.parametrize("root", [ROOT, DEVENV_ROOT], ids=[PACKAGE, DEVENV])
def test_no_import_circles(root: Path) -> None:
    """No module reaches itself through its imports, inside a room or across (function-level imports count)."""
    circles = _circles(_graph(root))
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_rooms_are_entered_through_their_public_module() -> None:
    """A room's public module is its package's ``__init__``; every name in its ``__all__`` is imported from
    there by other rooms (``from ..graveler import RangeRef``), never from the module that defines it
    (``from ..graveler.records import RangeRef``), so a room can move its insides without breaking its callers.
    Names a room does not export stay reachable in their module: the room has promised nothing about them."""
    problems = _bypasses(_modules(), _public_names())
    assert not problems, "imports that bypass a room's public module:\n" + "\n".join(problems)


def test_this_test_sees_a_circle_and_a_bypass(tmp_path: Path) -> None:
    """A planted circle inside a room (``a`` -> ``b`` -> ``a`` through a function-level import) and a planted
    import past a room's ``__init__`` are both found."""
    root = tmp_path / PACKAGE
    (root / "low").mkdir(parents=True)
    (root / "high").mkdir()
    (root / "__init__.py").write_text("")
    (root / "low" / "__init__.py").write_text('from .a import A\n\n__all__ = ["A"]\n')
    (root / "low" / "a.py").write_text("from .b import B\n\nA = B\n")
    (root / "low" / "b.py").write_text("B = 1\n\n\ndef f() -> None:\n    from .a import A\n")
    (root / "high" / "__init__.py").write_text("")
    (root / "high" / "c.py").write_text("from ..low.a import A\nfrom ..low import A as A2\n")
    assert _circles(_graph(root)) == [[f"{PACKAGE}.low.a", f"{PACKAGE}.low.b"]]
    problems = _bypasses(_modules(root), _public_names(root))
    assert len(problems) == 1 and problems[0].endswith(f"A from {PACKAGE}.low.a, not from {PACKAGE}.low"), problems
