"""``import_sdk`` defers the SDK's per-method argument models to each method's first call, and the checks stay."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json, time
    import pydantic.v1
    eager = pydantic.v1.validate_arguments
    from lakefs_mirror_dagster.lakefs.sdk import import_sdk

    started = time.perf_counter()
    sdk = import_sdk()
    seconds = time.perf_counter() - started
    api = sdk.ObjectsApi(sdk.ApiClient(sdk.Configuration(host="http://127.0.0.1:9/api/v1")))
    built_before = hasattr(sdk.ObjectsApi.list_objects, "vd")  # pydantic's checked function carries ``vd``
    try:
        api.list_objects("repo", "main", amount=5000)  # lakeFS's maximum is 1000: refused before any request
        refused = ""
    except pydantic.v1.ValidationError as exc:
        refused = str(exc)
    print(json.dumps({
        "built_before": built_before, "refused": refused, "restored": pydantic.v1.validate_arguments is eager,
        "same_module": import_sdk() is sdk, "seconds": seconds,
    }))
    """
)


def test_the_sdk_imports_without_building_its_argument_models_and_still_checks_arguments() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print("import_sdk took", result["seconds"])
    assert result["built_before"] is False
    assert "amount" in result["refused"] and "less than or equal to 1000" in result["refused"]
    assert result["restored"] and result["same_module"]
