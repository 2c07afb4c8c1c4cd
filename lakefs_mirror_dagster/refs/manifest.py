"""The manifest of one dumped repository, in the layout of lakeFS's ``lakefs-refs.py``.

``<repo>_manifest.json``::

    {"repository": {"name": ..., "storage_namespace": ..., "default_branch": ..., "storage_id": ...},
     "refs": {"commits_meta_range_id": ..., "tags_meta_range_id": ..., "branches_meta_range_id": ...}}

The manifest is all a restore needs besides the namespace's data (including the dump's ``_lakefs/``
metarange files), so it is validated completely before anything is created.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ManifestError

__all__ = [
    "REFS_FIELDS",
    "REPOSITORY_FIELDS",
    "RepositoryManifest",
    "load_manifest",
    "manifest_path",
    "parse_manifest",
    "write_manifest",
]

#: Required under ``repository`` (``storage_id`` may be absent: it then means ``""``, the single store).
REPOSITORY_FIELDS = ("name", "storage_namespace", "default_branch")
REFS_FIELDS = ("commits_meta_range_id", "tags_meta_range_id", "branches_meta_range_id")

# lakeFS's own rules (api/swagger.yml): repository names and storage namespace schemes.
_REPOSITORY_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{2,62}$")
_NAMESPACE = re.compile(r"^(s3|gs|https?|mem|local|transient)://.+$")
_METARANGE_ID = re.compile(r"^[0-9a-f]+$")


@dataclass(frozen=True)
class RepositoryManifest:
    """One repository's identity and the three metarange IDs lakeFS's refs dump returned."""

    name: str
    storage_namespace: str
    default_branch: str
    commits_meta_range_id: str
    tags_meta_range_id: str
    branches_meta_range_id: str
    storage_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "repository": {
                "name": self.name,
                "storage_namespace": self.storage_namespace,
                "default_branch": self.default_branch,
                "storage_id": self.storage_id,
            },
            "refs": {
                "commits_meta_range_id": self.commits_meta_range_id,
                "tags_meta_range_id": self.tags_meta_range_id,
                "branches_meta_range_id": self.branches_meta_range_id,
            },
        }

    def with_namespace(self, storage_namespace: str) -> RepositoryManifest:
        """The same dump, restored elsewhere (after its data was copied there)."""
        _check_namespace(storage_namespace, "target storage namespace")
        return dataclasses.replace(self, storage_namespace=storage_namespace)

    def with_storage_id(self, storage_id: str) -> RepositoryManifest:
        return dataclasses.replace(self, storage_id=storage_id)


def _check_namespace(value: str, what: str) -> None:
    if not _NAMESPACE.match(value):
        raise ManifestError(
            f"{what} {value!r} is not a storage namespace (expected e.g. s3://bucket/path or local://name)"
        )


def parse_manifest(data: Any, *, source: str = "manifest") -> RepositoryManifest:
    """Validate a manifest document; every missing or malformed field is named in one error."""
    if not isinstance(data, dict):
        raise ManifestError(f"{source}: expected a JSON object with 'repository' and 'refs', got {type(data).__name__}")
    problems: list[str] = []
    sections: dict[str, dict[str, Any]] = {}
    for section in ("repository", "refs"):
        value = data.get(section)
        if not isinstance(value, dict):
            problems.append(f"'{section}' section is missing" if value is None else f"'{section}' is not an object")
            value = {}
        sections[section] = value
    for section, names in (("repository", REPOSITORY_FIELDS), ("refs", REFS_FIELDS)):
        for name in names:
            value = sections[section].get(name)
            if value is None or value == "":
                problems.append(f"missing field {section}.{name}")
            elif not isinstance(value, str):
                problems.append(f"field {section}.{name} must be a string, got {type(value).__name__}")
    storage_id = sections["repository"].get("storage_id", "")
    if storage_id is None:
        storage_id = ""
    if not isinstance(storage_id, str):
        problems.append(f"field repository.storage_id must be a string, got {type(storage_id).__name__}")
    if problems:
        raise ManifestError(f"{source}: " + "; ".join(problems))
    repo, refs = sections["repository"], sections["refs"]
    if not _REPOSITORY_NAME.match(repo["name"]):
        problems.append(f"repository.name {repo['name']!r} is not a valid lakeFS repository name")
    if not _NAMESPACE.match(repo["storage_namespace"]):
        problems.append(f"repository.storage_namespace {repo['storage_namespace']!r} is not a storage namespace")
    for name in REFS_FIELDS:
        if not _METARANGE_ID.match(refs[name]):
            problems.append(f"refs.{name} {refs[name]!r} is not a metarange ID (lowercase hex)")
    if problems:
        raise ManifestError(f"{source}: " + "; ".join(problems))
    return RepositoryManifest(
        name=repo["name"],
        storage_namespace=repo["storage_namespace"],
        default_branch=repo["default_branch"],
        storage_id=storage_id,
        commits_meta_range_id=refs["commits_meta_range_id"],
        tags_meta_range_id=refs["tags_meta_range_id"],
        branches_meta_range_id=refs["branches_meta_range_id"],
    )


def load_manifest(path: str | Path) -> RepositoryManifest:
    """Read and validate ``path``; ManifestError (never a traceback) for unreadable or invalid files."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ManifestError(f"manifest {path}: no such file") from None
    except OSError as exc:
        raise ManifestError(f"manifest {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ManifestError(f"manifest {path}: not valid JSON ({exc})") from None
    return parse_manifest(data, source=f"manifest {path}")


def manifest_path(output_dir: str | Path, repository: str) -> Path:
    """``<output_dir>/<repository>_manifest.json``, the name ``lakefs-refs.py`` uses."""
    return Path(output_dir) / f"{repository}_manifest.json"


def write_manifest(manifest: RepositoryManifest, output_dir: str | Path) -> Path:
    """Write the manifest atomically (a crash never leaves half a manifest behind); returns its path."""
    path = manifest_path(output_dir, manifest.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{manifest.name}_manifest.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(manifest.to_json(), fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
