"""Every Dagster run worker imports the code location before its step starts, so heavy libraries that only
some runs need must not be imported by it: they add straight to mirror lag (lakefs_sdk ~1 s, pyspark and
dagster_pyspark ~0.5 s on the dev machine)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

HEAVY = ("lakefs_sdk", "pyspark", "dagster_pyspark", "azure.storage.blob", "google.cloud.storage")


def _loaded_after(code: str) -> list[str]:
    """Which of ``HEAVY`` a fresh interpreter has imported after running ``code``."""
    script = (
        textwrap.dedent(code) + f"\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_importing_the_code_location_imports_no_lakefs_sdk_or_spark() -> None:
    assert _loaded_after("import lakefs_mirror_dagster.orchestration.definitions") == []


def test_building_a_run_workers_definitions_imports_none_of_them() -> None:
    # What a run worker does after the import, before its step starts: build the definitions of its mirrors.
    loaded = _loaded_after(
        """
        import lakefs_mirror_dagster.orchestration.definitions as d
        built = d.build_definitions(["mirror-a"], reload=None)
        assert built.resources["lakefs_mirror_spark"].spark_config["spark.master"]
        """
    )
    assert loaded == []
