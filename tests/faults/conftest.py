"""The fault suite's own servers: it kills and restarts them, so it never touches the session's.

One environment for the whole package: source region ``fault-src`` on the local blockstore, destination
region ``fault-dst`` on its own MinIO server, and PostgreSQL as the shared mirrors database.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from lakefs_mirror_devenv import RegionSpec, environment_up, stop_environment

from .rig import DST, MINIO, SRC, FaultRig


@pytest.fixture(scope="package")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultRig]:
    state_dir = tmp_path_factory.mktemp("faults-env")
    env = environment_up(state_dir, (RegionSpec(SRC, "local"), RegionSpec(DST, f"s3:{MINIO}")), with_postgres=True)
    assert env.postgres is not None
    argv = Path(f"/proc/{env.postgres['pid']}/cmdline").read_bytes().decode().split("\0")
    pg_runtime = Path(argv[argv.index("-D") + 1]).parent
    fault_rig = FaultRig(env)
    try:
        yield fault_rig
    finally:
        fault_rig.close()
        stop_environment(env)
        # As root, PostgreSQL's data lives outside pytest's 0700 tmp dir (see devenv/postgres.py): remove it too.
        if pg_runtime.name.startswith("lakefs-mirror-pg-"):
            shutil.rmtree(pg_runtime, ignore_errors=True)
