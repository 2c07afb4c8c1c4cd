"""Rendering deploy/helm/lakefs-mirror with the Helm built from its Go module, and reading what it renders."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from lakefs_mirror_devenv import cache_dir

from tests.packaging.wheel import ROOT

__all__ = [
    "CHART",
    "CHART_SECRET_KEYS",
    "REFERENCE_SECRET_PATHS",
    "Rendered",
    "helm",
    "render",
    "split_secrets",
]

CHART = ROOT / "deploy" / "helm" / "lakefs-mirror"

#: The config keys the chart keeps out of its ConfigMap (templates/_helpers.tpl, lakefs-mirror.publicConfig).
CHART_SECRET_KEYS = frozenset(
    {
        "secret_key",
        "secret_access_key",
        "access_key_id",
        "aws_secret_access_key",
        "aws_access_key_id",
        "session_token",
        "credentials_json",
        "storage_access_key",
        "connection_string",
        "secret",
    }
)

#: The config field each of the reference's secret names stands for (config/env.py, REFERENCE_SECRET_NAMES).
REFERENCE_SECRET_PATHS = {
    ("lakefs", "access_key_id"): "source_lakefs_access_key_id",
    ("lakefs", "secret_access_key"): "source_lakefs_secret_access_key",
    ("auth", "encrypt", "secret_key"): "auth_encrypt_secret_key",
}


def helm(binary: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``helm`` with its config and caches in the build cache, never in the user's home (bounded in time)."""
    home = cache_dir() / "helm-home"
    env = dict(
        os.environ,
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
    )
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    if check:
        assert done.returncode == 0, f"helm {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@dataclass
class Rendered:
    """The manifests of one ``helm template``, by kind."""

    docs: list[dict[str, Any]]

    def kinds_and_names(self) -> list[tuple[str, str]]:
        return sorted((d["kind"], d["metadata"]["name"]) for d in self.docs)

    def one(self, kind: str) -> dict[str, Any]:
        (doc,) = [d for d in self.docs if d["kind"] == kind]
        return doc

    def config_text(self) -> str:
        return str(self.one("ConfigMap")["data"]["config.yaml"])

    def config(self) -> dict[str, Any]:
        loaded = yaml.safe_load(self.config_text())
        assert isinstance(loaded, dict)
        return loaded

    def containers(self) -> dict[str, dict[str, Any]]:
        spec = self.one("Deployment")["spec"]["template"]["spec"]
        return {c["name"]: c for c in spec["containers"]}


def render(
    binary: Path,
    values_files: Sequence[Path] = (),
    values: Mapping[str, Any] | None = None,
    *,
    release: str = "lakefs-mirror",
    check: bool = True,
) -> tuple[Rendered, subprocess.CompletedProcess[str]]:
    """``helm template`` of the chart with these values files and, last, ``values`` (passed as a JSON file)."""
    args = ["template", release, str(CHART)]
    for path in values_files:
        args += ["--values", str(path)]
    tmp: Path | None = None
    if values is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(values, handle)
            tmp = Path(handle.name)
        args += ["--values", str(tmp)]
    try:
        done = helm(binary, *args, check=check)
    finally:
        if tmp is not None:
            tmp.unlink()
    docs = [d for d in yaml.safe_load_all(done.stdout) if d] if done.returncode == 0 else []
    return Rendered(docs), done


def _env_name(path: Sequence[str]) -> str:
    return "REPLICATION_" + "_".join(t for p in path for t in re.split(r"[^A-Za-z0-9]+", p.upper()) if t)


def split_secrets(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A config as an operator splits it for the chart: (values for ``replication.config`` without any key the
    chart treats as secret, the Kubernetes secret's data). The secret uses the reference's names where the
    reference has one, ``REPLICATION_<FIELD>`` otherwise."""
    secret: dict[str, str] = {}

    def walk(node: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            here = (*path, str(key))
            if key in CHART_SECRET_KEYS:
                if value:
                    secret[REFERENCE_SECRET_PATHS.get(here) or _env_name(here)] = str(value)
            elif isinstance(value, Mapping):
                inner = walk(value, here)
                if inner:
                    out[key] = inner
            else:
                out[key] = value
        return out

    return walk(config, ()), secret
