"""The one root of every error this package raises on purpose.

Each room (``config``, ``storage``, ``lakefs``, ``graveler``, ``mirrors``, ``replication``, ``refs``, ``spark``,
``devenv``) keeps its own ``errors.py`` whose classes derive from ``LakeFSMirrorError``, so the CLI and the REST
API can catch one class, print one line and never show a traceback for a failure they expected.

A feature whose optional dependencies were not installed fails the same way, naming the pip extra to install
(``needs_extra`` around the import, ``require_extra`` where the import comes later).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator

__all__ = ["EXTRA_MODULES", "LakeFSMirrorError", "MissingExtraError", "needs_extra", "require_extra"]


class LakeFSMirrorError(Exception):
    """Base of every expected failure of lakefs-mirror-dagster."""


#: Each pip extra -> the modules it brings that the package imports (where a feature first needs them).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "gcs": ("google.cloud.storage", "google.api_core", "google.auth", "requests"),
    "azure": ("azure.storage.blob", "azure.core"),
    "postgres": ("psycopg",),
    "service": ("fastapi", "starlette", "uvicorn", "httpx"),
    "spark": ("pyspark", "dagster_pyspark"),
}


class MissingExtraError(LakeFSMirrorError, ImportError):
    """A feature was asked for whose optional dependencies (a pip extra) are not installed: the message says
    which extra to install, where a bare ``ModuleNotFoundError`` would name a module the user never chose."""

    def __init__(self, extra: str, feature: str, module: str) -> None:
        super().__init__(
            f"{feature} needs the optional dependencies of the '{extra}' extra (module {module} is not installed): "
            f"pip install 'lakefs-mirror-dagster[{extra}]'"
        )
        self.extra = extra


def _of_extra(extra: str, module: str) -> bool:
    """``module`` (what an import could not find: the module or one of its parents) belongs to ``extra``."""
    return any(m == module or m.startswith(module + ".") or module.startswith(m + ".") for m in EXTRA_MODULES[extra])


@contextlib.contextmanager
def needs_extra(extra: str, feature: str) -> Iterator[None]:
    """Around the import of an optional dependency: a module of ``extra`` that is missing becomes a
    ``MissingExtraError`` naming the extra; any other import error stays what it is."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name is None or not _of_extra(extra, exc.name):
            raise
        raise MissingExtraError(extra, feature, exc.name) from exc


def require_extra(extra: str, feature: str, *modules: str) -> None:
    """Fail now, naming the extra, if one of ``modules`` (default: all of the extra's) is not installed; imports
    nothing (a feature that loads its dependencies later, such as a SparkSession started on first use, says so
    before it starts)."""
    for module in modules or EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            raise MissingExtraError(extra, feature, module)
