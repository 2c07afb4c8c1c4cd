"""MinIO bucket replication between two local MinIO servers, set up with ``mc`` (the S3 API cannot).

This is the store-side replication ``transfer.mode: external`` relies on: a rule on the source bucket (for a
key prefix) sends every object written under it to the target bucket under the same key. Keys stay off the
command line: ``mc alias set`` reads them from stdin. ``mc`` keeps its aliases in a config directory of the
caller's choosing (never ``~/.mc``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .build import ensure_mc_binary
from .processes import DevenvError
from .servers import MinioInstance

__all__ = ["MinioClient"]

_MC_TIMEOUT_S = 60.0


class MinioClient:
    """``mc`` with its own config directory: one alias per MinIO server (its name), replication rules."""

    def __init__(self, config_dir: Path) -> None:
        self.binary = ensure_mc_binary()
        self.config_dir = config_dir
        config_dir.mkdir(parents=True, exist_ok=True)
        config_dir.chmod(0o700)  # the aliases' keys are stored here

    def run(self, *args: str, stdin: str | None = None) -> list[dict[str, Any]]:
        """``mc --json ARGS``: its JSON lines; a failure is a ``DevenvError`` with mc's own message."""
        argv = [str(self.binary), "--config-dir", str(self.config_dir), "--json", "--no-color", *args]
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=_MC_TIMEOUT_S)
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or any(line.get("status") == "error" for line in lines):
            raise DevenvError(f"mc {' '.join(args[:2])} failed (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
        return lines

    def alias(self, minio: MinioInstance) -> str:
        """``mc alias set`` for ``minio`` (named after it); returns the alias."""
        alias = minio.name
        self.run("alias", "set", alias, minio.endpoint, stdin=f"{minio.access_key}\n{minio.secret_key}\n")
        return alias

    def enable_versioning(self, minio: MinioInstance, bucket: str) -> None:
        """``mc version enable``: MinIO replicates only versioned buckets (source and target)."""
        self.run("version", "enable", f"{self.alias(minio)}/{bucket}")

    def replicate(
        self, source: MinioInstance, source_bucket: str, prefix: str, target: MinioInstance, target_bucket: str
    ) -> str:
        """A rule on ``source_bucket`` sending every object under ``prefix`` to ``target_bucket`` (same keys),
        after versioning both buckets; returns the remote target's ARN (for ``resync``). Objects written before
        the rule are left to MinIO's scanner (minutes) unless ``resync`` is called."""
        self.enable_versioning(source, source_bucket)
        self.enable_versioning(target, target_bucket)
        src = f"{self.alias(source)}/{source_bucket}/{prefix.strip('/')}"
        self.run("replicate", "add", src, "--remote-bucket", f"{self.alias(target)}/{target_bucket}", "--priority", "1")
        rules = self.run("replicate", "ls", f"{source.name}/{source_bucket}")
        arns = [r["rule"]["Destination"]["Bucket"] for r in rules if "rule" in r]
        if len(arns) != 1:
            raise DevenvError(f"expected one replication rule on {source.name}/{source_bucket}, found {rules}")
        return str(arns[0])

    def resync(self, source: MinioInstance, source_bucket: str, arn: str) -> None:
        """``mc replicate resync start``: replicate the objects already in the bucket now (existing objects)."""
        self.run("replicate", "resync", "start", f"{self.alias(source)}/{source_bucket}", "--remote-bucket", arn)
