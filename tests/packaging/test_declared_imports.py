"""Every third-party module the package imports comes from a distribution ``pyproject.toml`` declares, in its
core dependencies or in one of its extras: an import that works here only because some other package pulled its
distribution in would break a user's install the day that package stops doing so.

The package's sources are read (every ``import``, module level or inside a function, except those under
``if TYPE_CHECKING:``), each module is mapped to the distribution that installs it in this venv, and the
distribution's name is looked for among the declared requirements."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from functools import cache
from importlib.metadata import distribution, packages_distributions

from lakefs_mirror_dagster.errors import EXTRA_MODULES

from .wheel import ROOT

PACKAGE = "lakefs_mirror_dagster"

#: Imported but declared nowhere, on purpose (module -> why).
NOT_DECLARED = {
    # The development environment (and the demo in it) is a distribution of its own, never published: only the
    # `dev` commands import it, lazily, and say how to get it when it is missing (cli/dev.py, _devenv).
    "lakefs_mirror_devenv": "development environment",
}

#: Extras that are not for running the package.
NOT_RUNTIME_EXTRAS = {"test"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return _canonical(match.group(1))


def declared() -> dict[str, set[str]]:
    """Distribution -> where pyproject declares it (``core`` or the extra's name); the test extra left out."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    where: dict[str, set[str]] = {}
    groups = {"core": project["dependencies"], **project.get("optional-dependencies", {})}
    for group, requirements in groups.items():
        if group in NOT_RUNTIME_EXTRAS:
            continue
        for requirement in requirements:
            where.setdefault(_requirement_name(requirement), set()).add(group)
    return where


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(source: str) -> Iterator[tuple[str, int]]:
    """Absolute module names a source imports, with line numbers; relative imports and ``TYPE_CHECKING``
    blocks (never run) left out."""

    def walk(nodes: Iterable[ast.AST]) -> Iterator[tuple[str, int]]:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                yield from walk(node.orelse)
                continue
            if isinstance(node, ast.Import):
                yield from ((alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield node.module, node.lineno
            yield from walk(ast.iter_child_nodes(node))

    yield from walk(ast.parse(source).body)


def third_party_imports() -> dict[str, list[str]]:
    """Third-party module -> the places (``path:line``) under lakefs_mirror_dagster/ that import it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        for module, line in imported_modules(path.read_text()):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top == PACKAGE or top == "__future__":
                continue
            found.setdefault(module, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


@cache
def _top_level() -> dict[str, list[str]]:
    """``packages_distributions()`` reads every installed distribution's files: once."""
    return packages_distributions()


@cache
def _files(dist: str) -> frozenset[str]:
    return frozenset(str(f) for f in distribution(dist).files or ())


def owners(module: str) -> set[str]:
    """The distributions (canonical names) that install ``module`` here. A namespace package (``google``,
    ``azure``) is shared by several: the one whose files hold the longest prefix of the dotted name wins."""
    parts = module.split(".")
    candidates = set(_top_level().get(parts[0], ()))
    if len(candidates) > 1:
        for n in range(len(parts), 1, -1):
            prefix = "/".join(parts[:n])
            holding = {
                d for d in candidates if any(f.startswith(prefix + "/") or f == prefix + ".py" for f in _files(d))
            }
            if holding:
                candidates = holding
                break
    return {_canonical(d) for d in candidates}


def undeclared(imports: dict[str, list[str]], where: dict[str, set[str]]) -> list[str]:
    """One line per imported module whose distribution is not declared (or is not installed here)."""
    problems = []
    for module, places in sorted(imports.items()):
        if module.split(".")[0] in NOT_DECLARED:
            continue
        dists = owners(module)
        if not dists:
            problems.append(f"{module} (imported at {places[0]}) is installed by no distribution here")
        elif not dists & where.keys():
            problems.append(f"{module} (imported at {places[0]}) comes from {sorted(dists)}: not in pyproject.toml")
    return problems


def test_every_imported_distribution_is_declared() -> None:
    imports = third_party_imports()
    assert {"dagster", "boto3", "obstore"} <= {m.split(".")[0] for m in imports}, "the walk found the imports"
    assert not undeclared(imports, declared())


def test_each_extras_modules_come_from_that_extra() -> None:
    """``errors.EXTRA_MODULES`` (what a missing extra's error names) matches the extras pyproject declares."""
    where = declared()
    for extra, modules in EXTRA_MODULES.items():
        for module in modules:
            assert any(extra in where.get(d, ()) for d in owners(module)), (extra, module, owners(module))


def test_an_undeclared_import_is_caught() -> None:
    """tabulate is installed (dagster needs it) but not declared: importing it from the package would fail."""
    imports = {m: ["x.py:1"] for m, _ in imported_modules("import tabulate\nimport google.cloud.storage\n")}
    where = declared()
    assert undeclared(imports, where) == [
        "tabulate (imported at x.py:1) comes from ['tabulate']: not in pyproject.toml"
    ]
    del where["google-cloud-storage"]
    assert len(undeclared(imports, where)) == 2, "a namespace package maps to its own distribution"
    hidden = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tabulate\n"
    assert list(imported_modules(hidden)) == [("typing", 1)]
