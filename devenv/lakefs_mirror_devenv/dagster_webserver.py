"""``dagster-webserver`` on a throwaway instance, and the GraphQL calls Dagster's UI makes through it.

Tests and benchmarks drive Dagster as an operator does in the UI, so what they prove is what a click does:
stopping a sensor (the toggle on its page), launching a backfill of asset partitions (the "Materialize" dialog's
``launchPartitionBackfill``), reading a backfill's status, the daemons' health. Each is one POST to ``/graphql``
with the UI's mutation or query; no private Dagster API is involved.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .processes import DevenvError, free_port, pid_alive, start_process, stop_pid, wait_http_ok

__all__ = [
    "REPOSITORY",
    "TERMINAL_BACKFILL_STATUSES",
    "backfill_status",
    "daemons_healthy",
    "dagster_webserver",
    "graphql",
    "launch_asset_backfill",
    "stop_sensor",
]

#: The repository name Dagster gives a code location's ``Definitions``.
REPOSITORY = "__repository__"
#: A backfill in one of these states will not change any more (Dagster's ``BulkActionStatus``).
TERMINAL_BACKFILL_STATUSES = frozenset({"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"})

_SENSOR_STATE = """
query SensorState($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor { sensorState { id status } }
    ... on PythonError { message }
    ... on SensorNotFoundError { message }
  }
}"""

_STOP_SENSOR = """
mutation StopSensor($id: String!) {
  stopSensor(id: $id) {
    __typename
    ... on StopSensorMutationResult { instigationState { status } }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
  }
}"""

# The UI's LAUNCH_PARTITION_BACKFILL_MUTATION, as its "Materialize" dialog sends it for selected partitions.
_LAUNCH_BACKFILL = """
mutation LaunchPartitionBackfill($backfillParams: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $backfillParams) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PartitionSetNotFoundError { message }
    ... on InvalidStepError { invalidStepKey }
    ... on InvalidOutputError { stepKey invalidOutputName }
    ... on UnauthorizedError { message }
    ... on PythonError { message stack }
  }
}"""

_BACKFILL_STATUS = """
query BackfillStatus($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status }
    ... on PythonError { message }
    ... on BackfillNotFoundError { message }
  }
}"""

_DAEMON_HEALTH = """
query DaemonHealth {
  instance { daemonHealth { allDaemonStatuses { daemonType healthy } } }
}"""


@contextmanager
def dagster_webserver(
    home: Path,
    *,
    workspace: Path,
    replication_config: Path,
    log_path: Path,
    timeout_s: float = 240.0,
    env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """``dagster-webserver`` on 127.0.0.1 (a free port) for the instance at ``home``, loading ``workspace`` with
    the region's replication config; yields its URL once it answers. Stopped, with its code server, on exit."""
    port = free_port()
    argv = [str(Path(sys.executable).parent / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port)]
    variables = {
        "DAGSTER_HOME": str(home),
        "LAKEFS_MIRROR_CONFIG": str(replication_config),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        **(env or {}),
    }
    process = start_process([*argv, "-w", str(workspace)], log_path=log_path, env=variables, cwd=workspace.parent)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http_ok(f"{url}/server_info", timeout_s=timeout_s, process=process, log_path=log_path)
        yield url
    finally:
        stop_pid(process.pid)  # the group holds the webserver and the code server it spawned
        if pid_alive(process.pid):
            raise DevenvError(f"dagster-webserver (pid {process.pid}) did not stop")


def graphql(url: str, query: str, variables: Mapping[str, Any] | None = None, *, timeout_s: float = 120.0) -> Any:
    """POST ``query`` to the webserver at ``url``; its ``data``, or DevenvError with the GraphQL errors."""
    body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
    request = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        answer = json.loads(response.read())
    if answer.get("errors"):
        raise DevenvError(f"GraphQL errors from {url}: {json.dumps(answer['errors'])[:2000]}")
    return answer["data"]


def stop_sensor(url: str, location: str, sensor: str, *, timeout_s: float = 180.0) -> None:
    """Stop ``sensor`` of code location ``location``, as its toggle in the UI does: the instance records it
    stopped, so no daemon ticks it, whatever its default status. Waits (bounded) for the location to load."""
    selector = {"repositoryLocationName": location, "repositoryName": REPOSITORY, "sensorName": sensor}
    deadline = time.monotonic() + timeout_s
    found: dict[str, Any] = {}
    for _ in range(int(timeout_s) + 1):  # the webserver answers before its code location has loaded
        found = graphql(url, _SENSOR_STATE, {"selector": selector})["sensorOrError"]
        if found["__typename"] == "Sensor" or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    if found.get("__typename") != "Sensor":
        raise DevenvError(f"sensor {sensor} not found in {location} within {timeout_s:.0f}s: {found}")
    stopped = graphql(url, _STOP_SENSOR, {"id": found["sensorState"]["id"]})["stopSensor"]
    if stopped["__typename"] != "StopSensorMutationResult" or stopped["instigationState"]["status"] != "STOPPED":
        raise DevenvError(f"could not stop sensor {sensor}: {stopped}")


def launch_asset_backfill(url: str, asset_key: Sequence[str], partitions: Sequence[str], *, title: str = "") -> str:
    """Launch a backfill of ``partitions`` of one asset, as the UI's "Materialize" dialog does; its ID."""
    params = {
        "assetSelection": [{"path": list(asset_key)}],
        "partitionNames": list(partitions),
        "fromFailure": False,
        "title": title or None,
        "tags": [],
    }
    launched = graphql(url, _LAUNCH_BACKFILL, {"backfillParams": params})["launchPartitionBackfill"]
    if launched["__typename"] != "LaunchBackfillSuccess":
        raise DevenvError(f"launchPartitionBackfill failed: {json.dumps(launched)[:3000]}")
    return str(launched["backfillId"])


def backfill_status(url: str, backfill_id: str) -> str:
    """The backfill's status as the UI shows it (``REQUESTED``, ``COMPLETED_SUCCESS``, ...)."""
    found = graphql(url, _BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]
    if found["__typename"] != "PartitionBackfill":
        raise DevenvError(f"backfill {backfill_id}: {found}")
    return str(found["status"])


def daemons_healthy(url: str, daemons: Sequence[str] = ("BACKFILL", "QUEUED_RUN_COORDINATOR")) -> bool:
    """Whether each of ``daemons`` has a recent heartbeat (the UI's Deployment > Daemons page)."""
    statuses = graphql(url, _DAEMON_HEALTH)["instance"]["daemonHealth"]["allDaemonStatuses"]
    healthy = {s["daemonType"] for s in statuses if s["healthy"]}
    return all(d in healthy for d in daemons)
