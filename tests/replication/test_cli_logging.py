"""`lakefs-mirror sync` with the config's ``logging`` section, as a process: JSON lines or text on stderr, at the
configured level, and a record about a mirror names the mirror and its source repository."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from lakefs_mirror_dagster.region import ReplicationService
from tests.cli_process import run_cli


def _config_with_logging(config_path: Callable[[str], Path], tmp_path: Path, **logging: str) -> Path:
    raw = yaml.safe_load(config_path("region-b").read_text())
    raw["logging"] = logging
    path = tmp_path / f"replication-{'-'.join(logging.values())}.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    return path


def _commit(service: ReplicationService, repo: str, key: str) -> None:
    client = service.client("region-a")
    client.upload_object(repo, "main", key, key.encode())
    client.commit(repo, "main", f"add {key}")


def _sync(config: Path, mirror: str, tmp_path: Path) -> tuple[str, list[str]]:
    done = run_cli("--config", str(config), "sync", "--once", "--mirror", mirror, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, [line for line in done.stderr.splitlines() if line.strip()]


def test_sync_logs_in_the_configured_format_and_level(
    lakefs_env: Any, config_path: Callable[[str], Path], service_for: Any, unique_name: Any, tmp_path: Path
) -> None:
    svc_a = service_for("region-a")
    repo, name = unique_name("logs"), unique_name("mirror")
    svc_a.client("region-a").create_repository(repo, lakefs_env.region("region-a").namespace_for(repo))
    _commit(svc_a, repo, "a")
    svc_a.create_mirror(
        source_repository=repo,
        name=name,
        region="region-b",
        storage_namespace=lakefs_env.region("region-b").namespace_for(name),
    )

    out, err = _sync(_config_with_logging(config_path, tmp_path, level="INFO", format="json"), name, tmp_path)
    assert "created" in out
    docs = [json.loads(line) for line in err]  # every line on stderr is one JSON object
    assert all({"time", "level", "logger", "message"} <= doc.keys() for doc in docs), docs
    about_main = [d for d in docs if d.get("branch") == "main"]
    assert about_main, docs
    assert about_main[0]["level"] == "INFO" and about_main[0]["logger"].startswith("lakefs_mirror_dagster.")
    assert (about_main[0]["mirror"], about_main[0]["repository"]) == (name, repo)
    assert "created" in about_main[0]["message"]
    [activated] = [d for d in docs if "is active" in d["message"]]
    assert (activated["mirror"], activated["repository"], activated["region"]) == (name, repo, "region-b")

    _commit(svc_a, repo, "b")
    out, err = _sync(_config_with_logging(config_path, tmp_path, level="ERROR", format="json"), name, tmp_path)
    assert "advanced" in out, out  # the branch moved, as above: only its INFO record is not printed
    assert all(json.loads(line)["level"] == "ERROR" for line in err), err
    assert not any(name in line for line in err)

    _commit(svc_a, repo, "c")
    out, err = _sync(_config_with_logging(config_path, tmp_path, level="INFO", format="text"), name, tmp_path)
    assert "advanced" in out
    [line] = [line for line in err if "branch main" in line and ".progress:" not in line]  # progress has its own
    assert f" INFO lakefs_mirror_dagster.replication.engine: branch main of {name}: advanced" in line
    assert f"[mirror={name} repository={repo} branch=main commit=" in line and line.endswith("]")
    assert not line.startswith("{")
