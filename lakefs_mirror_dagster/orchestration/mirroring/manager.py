"""The mirrors-manager sensor: reconciles mirror definitions with this region and with Dagster itself.

Each tick: pending (or failed) mirrors get their read-only repository and become active; mirrors being
deleted lose their repository (only a read-only one on the mirror's namespace: ``ReplicationService.retire``)
and then their record, and their branch partitions go too. When
the set of active mirrors differs from the one the loaded definitions were built for, the sensor asks
Dagster to reload the code location (``reload.py``), which is how a mirror created through the API or
the CLI gets its asset and commit sensor without restarting any Dagster process.
"""

import json
import time
from dataclasses import dataclass, field

import dagster as dg

from ...mirrors import MirrorState
from ...region import RETIRING, ReplicationService
from ..options import DEFAULT_OPTIONS, MirrorDefsOptions
from ..reload import Reload, request_reload

__all__ = ["MANAGER_SENSOR_NAME", "ManagerReport", "build_mirrors_manager_sensor", "reconcile_mirrors"]

MANAGER_SENSOR_NAME = DEFAULT_OPTIONS.name("manager")
#: A reload that did not take effect is asked for again after this long.
RELOAD_RETRY_SECONDS = 300.0
_ACTIVATE = (MirrorState.PENDING, MirrorState.CREATING, MirrorState.FAILED)


@dataclass
class ManagerReport:
    """What one reconciliation did, per mirror name."""

    activated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)

    def summary(self) -> str:
        parts = [f"{len(self.active)} active mirror(s)"]
        if self.activated:
            parts.append("activated " + ", ".join(self.activated))
        if self.deleted:
            parts.append("deleted " + ", ".join(self.deleted))
        if self.errors:
            parts.append("errors: " + "; ".join(f"{k}: {v}" for k, v in self.errors.items()))
        return ", ".join(parts)


def reconcile_mirrors(service: ReplicationService) -> ManagerReport:
    """One pass over this region's mirrors; a failing mirror never stops the others."""
    report = ManagerReport()
    mine = list(service.my_mirrors())
    storeless = service.fail_storeless_mirrors(mine)
    for mirror in mine:
        if mirror.id in storeless:
            report.errors[mirror.name] = storeless[mirror.id]
            continue
        try:
            if mirror.state in _ACTIVATE:
                service.activate(mirror)
                report.activated.append(mirror.name)
                report.active.add(mirror.name)
            elif mirror.state == MirrorState.ACTIVE:
                report.active.add(mirror.name)
            elif mirror.state in RETIRING:
                service.retire(mirror)  # refuses a repository that is not this mirror's
                report.deleted.append(mirror.name)
        except Exception as exc:
            report.errors[mirror.name] = f"{type(exc).__name__}: {exc}"
    return report


def build_mirrors_manager_sensor(
    loaded_mirrors: frozenset[str] | None,
    *,
    interval_seconds: int,
    location_name: str,
    reload: Reload | None = request_reload,
    options: MirrorDefsOptions = DEFAULT_OPTIONS,
) -> dg.SensorDefinition:
    """The manager sensor; ``loaded_mirrors`` are the mirrors the current definitions have assets for.

    ``reload=None`` (in-process use) only reports that the definitions are out of date.
    """

    @dg.sensor(
        name=options.name("manager"),
        minimum_interval_seconds=interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        required_resource_keys={options.resource_key},
        description="Activates pending mirrors, deletes deleted ones, and reloads definitions when mirrors change.",
    )
    def mirrors_manager(context: dg.SensorEvaluationContext, **_resources: object) -> dg.SensorResult:
        service = options.replication(context).service()
        report = reconcile_mirrors(service)
        dynamic: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
        for name in report.deleted:
            keys = context.instance.get_dynamic_partitions(options.partitions_name(name))
            if keys:
                dynamic.append(dg.DeleteDynamicPartitionsRequest(options.partitions_name(name), keys))
        state = json.loads(context.cursor) if context.cursor else {}
        message = report.summary()
        wanted = sorted(report.active)
        if loaded_mirrors is not None and set(wanted) != loaded_mirrors:
            stale = state.get("reload_for") != wanted or time.time() - state.get("at", 0.0) > RELOAD_RETRY_SECONDS
            if reload is None:
                message += "; definitions are out of date (reload the code location)"
            elif stale:
                location = context.code_location_origin.location_name if context.code_location_origin else ""
                message += "; " + reload(location or location_name)
                state = {"reload_for": wanted, "at": time.time()}
            else:
                message += "; waiting for the requested code location reload"
        for name, error in report.errors.items():
            context.log.error(f"mirror {name}: {error}")
        context.log.info(message)
        return dg.SensorResult(skip_reason=message, dynamic_partitions_requests=dynamic, cursor=json.dumps(state))

    return mirrors_manager
