"""``scrub_job`` and its hourly schedule: the mirrors' bytes re-read at rest and repaired, a slice at a time.

The job runs ``ReplicationService.scrubber`` (as ``lakefs-mirror scrub`` does) on this region's active mirrors.
The schedule passes slice ``hour % slices`` of ``slices`` (24 by default), so every range is read once a day and
no run reads a whole mirror. It is off until an operator turns it on: scrubbing reads every byte of the
mirrors, which costs requests and egress.
"""

# No ``from __future__ import annotations``: Dagster resolves op annotations (config classes) at runtime.
from typing import Any

import dagster as dg
from pydantic import Field

from ..mirrors import MirrorState
from .options import DEFAULT_OPTIONS, MirrorDefsOptions
from .resources import ReplicationResource

__all__ = ["ScrubConfig", "build_scrub_job", "scrub_definitions", "scrub_job", "scrub_schedule"]

DEFAULT_SLICES = 24


class ScrubConfig(dg.Config):
    """What to scrub, under ``ops.scrub_mirrors.config`` (a run launched by hand reads every slice)."""

    mirrors: list[str] = Field(default_factory=list, description="mirror names; empty: every active mirror")
    slices: int = Field(default=DEFAULT_SLICES, ge=1, description="ranges are split into this many slices")
    part: int = Field(default=-1, ge=-1, description="the slice to read; -1: every slice")
    sample: float = Field(default=1.0, gt=0, le=1, description="fraction of the objects read")
    repair: bool = Field(default=True, description="copy damaged files again from the source")


def _scrub_mirrors(context: dg.OpExecutionContext, config: ScrubConfig, replication: ReplicationResource) -> Any:
    """Scrub each mirror; one that cannot be scrubbed is reported and the others go on. Fails at the end if any
    mirror still holds damage (or could not be read), naming them."""
    if config.part >= config.slices:
        raise dg.Failure(f"scrub: part {config.part} is not a slice of {config.slices} (0 to {config.slices - 1})")
    service = replication.service()
    names = config.mirrors or [m.name for m in service.my_mirrors() if m.state == MirrorState.ACTIVE]
    part = None if config.part < 0 else (config.part, config.slices)
    reports: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            report = service.scrubber(name).scrub(sample=config.sample, part=part, repair=config.repair)
            reports[name] = report.to_json()
        except Exception as exc:  # one mirror's problem never stops the others
            reports[name] = {"ok": False, "errors": [f"{type(exc).__name__}: {exc}"]}
        done = reports[name]
        context.log.info(
            f"scrub of {name} (slice {'all' if part is None else f'{part[0]}/{part[1]}'}): "
            f"{done.get('objects_checked', 0)} object(s) read, {done.get('damaged_count', 0)} damaged, "
            f"{done.get('repaired', 0)} repaired" + (f"; {done['errors'][0]}" if done.get("errors") else "")
        )
    context.add_output_metadata(
        {
            "mirrors": len(reports),
            "objects_checked": sum(r.get("objects_checked", 0) for r in reports.values()),
            "damaged": sum(r.get("damaged_count", 0) for r in reports.values()),
            "repaired": sum(r.get("repaired", 0) for r in reports.values()),
            "reports": dg.MetadataValue.json(reports),
        }
    )
    bad = sorted(name for name, r in reports.items() if not r["ok"])
    if bad:
        raise dg.Failure(f"scrub: damage left or unreadable in {', '.join(bad)}", metadata={"mirrors": bad})
    return reports


def build_scrub_job(options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.JobDefinition:
    """The scrub job on the resource ``options.resource_key`` (its op is ``scrub_mirrors`` whatever the options)."""

    @dg.op(name="scrub_mirrors", required_resource_keys={options.resource_key})
    def scrub_mirrors(context: dg.OpExecutionContext, config: ScrubConfig) -> Any:
        return _scrub_mirrors(context, config, options.replication(context))

    @dg.job(
        name=options.job_name("scrub_job"),
        description="Re-read the mirrors' files and objects at rest; repair what differs from the source",
    )
    def scrub_job() -> None:
        scrub_mirrors()

    return scrub_job


def build_scrub_schedule(job: dg.JobDefinition, options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.ScheduleDefinition:
    """The hourly schedule of ``job`` (stopped until an operator turns it on)."""

    @dg.schedule(
        name=options.job_name("scrub_schedule"),
        job=job,
        cron_schedule="0 * * * *",
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description=f"Hourly: slice hour % {DEFAULT_SLICES} of every active mirror (every range once a day)",
    )
    def scrub_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        return _slice_request(context)

    return scrub_schedule


def _slice_request(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    hour = context.scheduled_execution_time.hour if context.scheduled_execution_time else 0
    part = hour % DEFAULT_SLICES
    return dg.RunRequest(
        run_key=f"scrub-{context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else 0}",
        run_config={"ops": {"scrub_mirrors": {"config": {"part": part, "slices": DEFAULT_SLICES}}}},
        tags={"lakefs_mirror/scrub_slice": f"{part}/{DEFAULT_SLICES}"},
    )


scrub_job = build_scrub_job()
scrub_schedule = build_scrub_schedule(scrub_job)


def scrub_definitions(options: MirrorDefsOptions = DEFAULT_OPTIONS) -> dg.Definitions:
    """The scrub domain: one job and its (stopped) hourly schedule, on the resource ``options.resource_key``."""
    if options == DEFAULT_OPTIONS:
        return dg.Definitions(jobs=[scrub_job], schedules=[scrub_schedule])
    job = build_scrub_job(options)
    return dg.Definitions(jobs=[job], schedules=[build_scrub_schedule(job, options)])
