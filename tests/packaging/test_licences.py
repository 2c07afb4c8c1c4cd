"""No GPL, LGPL or AGPL distribution in what ``pip install 'lakefs-mirror-dagster[all]'`` brings, except the
few named below with the reason they are acceptable.

The closure is walked from this venv's installed metadata (``Requires-Dist`` with its markers and extras), and
each distribution's licence is read as pip shows it: ``License-Expression`` (PEP 639), else its licence
classifiers, else its ``License`` field."""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib.metadata import distribution

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

#: Copyleft distributions allowed, with why.
ALLOWED_COPYLEFT = {
    # psycopg 3 (the `postgres` extra only: a PostgreSQL mirrors database) is LGPL-3.0-only. The package imports
    # it unmodified, as a separate distribution the user's pip installs from PyPI, and never bundles it, which
    # the LGPL permits for an Apache-2.0 program. An install without the extra does not have it.
    "psycopg": "LGPL-3.0-only, optional (postgres extra), used unmodified through import",
    "psycopg-binary": "psycopg's compiled part, same licence and terms",
}

_COPYLEFT = re.compile(r"(?<![A-Za-z])(?:A|L)?GPL|General Public License", re.IGNORECASE)


def runtime_closure(root: str, extras: Iterable[str]) -> dict[str, frozenset[str]]:
    """Canonical name -> extras asked of it, for ``root[extras]`` and everything it requires, transitively."""
    seen: dict[str, frozenset[str]] = {}
    todo = [(root, frozenset(extras))]
    while todo:
        name, wanted = todo.pop()
        key = canonicalize_name(name)
        if key in seen and wanted <= seen[key]:
            continue
        seen[key] = seen.get(key, frozenset()) | wanted
        for line in distribution(name).requires or ():
            req = Requirement(line)
            environments = [{"extra": e} for e in seen[key] or {""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in environments):
                todo.append((req.name, frozenset(req.extras)))
    return seen


def licence(name: str) -> str:
    """The distribution's licence as its metadata states it; ``""`` when it states none."""
    meta = distribution(name).metadata
    if meta.get("License-Expression"):
        return str(meta["License-Expression"])
    classifiers = [c.rsplit("::", 1)[1].strip() for c in meta.get_all("Classifier") or () if c.startswith("License")]
    if classifiers:
        return " / ".join(classifiers)
    return (meta.get("License") or "").strip().splitlines()[0] if meta.get("License") else ""


def is_copyleft(text: str) -> bool:
    return bool(_COPYLEFT.search(text))


def test_no_copyleft_licence_in_the_all_extras_closure() -> None:
    closure = runtime_closure("lakefs-mirror-dagster", ["all"])
    assert {"dagster", "google-cloud-storage", "azure-storage-blob", "pyspark", "fastapi", "psycopg"} <= set(closure)
    licences = {name: licence(name) for name in sorted(closure)}
    assert not [n for n, text in licences.items() if not text], "distributions that state no licence"
    copyleft = {n: text for n, text in licences.items() if is_copyleft(text) and n not in ALLOWED_COPYLEFT}
    assert not copyleft, f"GPL-family licences in the runtime closure: {copyleft}"


def test_the_exceptions_are_still_needed() -> None:
    """An exception whose distribution left the closure, or changed its licence, is removed from the list."""
    closure = runtime_closure("lakefs-mirror-dagster", ["all"])
    for name in ALLOWED_COPYLEFT:
        assert name in closure and is_copyleft(licence(name)), name


def test_the_licence_reader_tells_copyleft_from_permissive() -> None:
    for text in ("LGPL-3.0-only", "GPL-2.0-or-later", "AGPL-3.0", "GNU Lesser General Public License v3 (LGPLv3)"):
        assert is_copyleft(text), text
    for text in ("MIT", "Apache-2.0", "BSD-3-Clause", "MPL-2.0", "Apache-2.0 OR BSD-3-Clause", "PSF-2.0"):
        assert not is_copyleft(text), text
