"""``sync``: this region's mirrors replicated pass after pass (``replication.sync_passes`` schedules them),
the results printed, a live display and metrics beside, a signal ending it cleanly."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from typing import Any

from .common import load_cli_config, mirror_of_this_region, no_such_mirror
from .exit_codes import ExitCode

__all__ = ["STOPPED_BY", "add_sync_command", "format_sync_plan", "format_sync_result"]


def _sync(args: argparse.Namespace) -> int:
    config = load_cli_config(args)
    if args.dry_run:
        return _sync_dry_run(args, config)
    from ..region import ReplicationService, sync_passes
    from .progress_display import progress_sink

    metrics_address = _metrics_address(args, config)  # a bad address is refused before anything starts
    session = None
    if args.spark or config.spark.transfer_enabled:  # big plans copy in Spark tasks; the session starts on first use
        from ..spark.session import LazySparkSession, spark_session_config
        from ..spark.wiring import SparkPlugs

        session = LazySparkSession(spark_session_config(config.spark, app_name="lakefs-mirror-transfer"))
        service = ReplicationService(config, plugs=SparkPlugs(config, session, transfer=True))
    else:
        service = ReplicationService(config)
    if args.mirror:
        try:
            args.mirror = mirror_of_this_region(service, args.mirror)
        except BaseException:
            service.close()
            raise
    display = contextlib.ExitStack()  # the live display ends with the command, whatever happens
    if metrics_address:
        try:
            display.callback(_serve_sync_metrics(service, metrics_address, args).stop)
        except BaseException:
            service.close()
            raise
    _stop_on_signals(display)
    sink = display.enter_context(progress_sink(args.progress, json_output=args.json, every_s=args.progress_every))
    if sink is not None:
        service.on_progress(sink[0], every_s=sink[1])
    ok = True
    passes = sync_passes(
        service,
        passes=args.max_passes if args.max_passes else 1 if args.once else 10**12,
        name=args.mirror,
        branches=args.branch,
    )
    try:
        for done in passes:  # a retry pass with nothing due prints nothing and leaves the status as it was
            if done.full and args.mirror and not done.results:
                no_such_mirror(args.mirror, config.region)
                return ExitCode.USAGE
            for result in done.results:
                print(json.dumps(result.to_json()) if args.json else format_sync_result(result), flush=True)
            if done.full or done.results:
                ok = all(r.ok for r in done.results)
    finally:
        passes.close()
        display.close()
        service.close()
        if session is not None:
            session.stop()
    return ExitCode.OK if ok else ExitCode.FAILED


def _sync_dry_run(args: argparse.Namespace, config: Any) -> int:
    """One pass planned and printed, nothing written (region/sync_plan.py says what it covers)."""
    from ..region import ReplicationService, plan_sync

    if args.spark or args.max_passes:
        given = "--spark" if args.spark else "--max-passes"
        print(f"lakefs-mirror: sync --dry-run plans one pass and copies nothing: {given} has no use", file=sys.stderr)
        return ExitCode.USAGE
    service = ReplicationService(config)
    try:
        name = mirror_of_this_region(service, args.mirror) if args.mirror else None
        plans = plan_sync(service, name=name, branches=args.branch)
    finally:
        service.close()
    if args.mirror and not plans:
        no_such_mirror(args.mirror, service.config.region)
        return ExitCode.USAGE
    for plan in plans:
        print(json.dumps(plan.to_json()) if args.json else format_sync_plan(plan), flush=True)
    return ExitCode.FAILED if any(p.error for p in plans) else ExitCode.OK


def format_sync_plan(plan: Any) -> str:
    """A mirror's planned pass: its repository, then one line per ref that would change."""
    repository = {
        "create": "would create the mirror repository",
        "delete": "would delete the mirror (repository and record)",
        "exists": "mirror repository exists",
    }[plan.repository]
    lines = [f"mirror {plan.mirror} <- {plan.source_repository} (dry run): {repository}"]
    if plan.error:
        lines.append(f"  ! would not be synced: {plan.error}")
    for ref in plan.refs:
        target = {"delete": "", "create": f" at {ref.source_commit[:12]}"}.get(
            ref.action, f" {(ref.mirror_commit or '')[:12]} -> {(ref.source_commit or '')[:12]}"
        )
        lines.append(f"  {ref.kind:6} {ref.name:24} would {ref.action}{target}")
    if plan.repository != "delete" and not plan.error:
        lines.append(f"  {len(plan.refs)} ref(s) to change, {plan.unchanged} unchanged")
    return "\n".join(lines)


def _metrics_address(args: argparse.Namespace, config: Any) -> str:
    """Where ``sync`` serves its metrics (``--metrics-listen``, else ``metrics.listen_address``; "" for nowhere),
    checked: a ``ConfigError`` naming the flag or key otherwise."""
    from ..config import ConfigError, parse_listen_address

    address = str(args.metrics_listen or config.metrics.listen_address)
    if address:
        try:
            parse_listen_address(address)
        except ValueError as exc:
            raise ConfigError(f"{_metrics_source(args)}: {exc}") from None
    return address


def _metrics_source(args: argparse.Namespace) -> str:
    return "--metrics-listen" if args.metrics_listen else "metrics.listen_address"


def _serve_sync_metrics(service: Any, address: str, args: argparse.Namespace) -> Any:
    """Start the loop's metrics listener, its counters fed by every pass (docs/metrics.md); one line says where."""
    from ..metrics import SyncMetrics, metrics_registry, start_metrics_server

    counters = SyncMetrics()
    server = start_metrics_server(address, metrics_registry(service, sync=counters), what=_metrics_source(args))
    service.on_synced(counters.observe)
    print(f"lakefs-mirror: metrics at {server.url}", file=sys.stderr, flush=True)
    return server


#: Exit statuses of a ``sync`` stopped by a signal (the shell's convention: 128 + the signal's number).
STOPPED_BY = {signal.SIGINT: ExitCode.INTERRUPTED, signal.SIGTERM: ExitCode.TERMINATED}


def _stop_on_signals(display: contextlib.ExitStack) -> None:
    """SIGINT and SIGTERM end ``sync`` at once and cleanly: the records of refs in flight are removed, the live
    display is closed, one line says so, and the exit status is 130 or 143. Stopping anywhere is safe (a ref
    moves only to a completely copied and validated commit; the next pass finds what was copied), so the process
    does not wait for the copies on its worker threads."""
    from ..replication.in_flight import clear_in_flight_records

    def stop(signum: int, _frame: object) -> None:
        signal.signal(signum, signal.SIG_DFL)  # a second signal ends the process the default way
        clear_in_flight_records(timeout_s=5.0)
        with contextlib.suppress(Exception):
            display.close()
        name = signal.Signals(signum).name
        print(f"lakefs-mirror: sync stopped by {name}; every mirror ref is at a complete commit", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(STOPPED_BY[signal.Signals(signum)])

    for signum in STOPPED_BY:
        signal.signal(signum, stop)


def format_sync_result(result: Any) -> str:
    """One line per ref: action, commits, objects, bytes, lag (what an operator scans for)."""
    lines = [f"mirror {result.mirror} <- {result.source_repository} ({result.duration_seconds:.1f}s)"]
    if result.error:
        lines.append(f"  ! not synced: {result.error}")
    for ref in result.refs:
        s = ref.stats
        lag = f"{ref.lag_seconds:.1f}s" if ref.lag_seconds is not None else "-"
        head = (ref.mirror_commit or "-")[:12]
        lines.append(
            f"  {ref.kind:6} {ref.name:24} {ref.action:9} head {head:12} commits {s.commits:4} "
            f"objects {s.objects_copied:6} (+{s.objects_skipped + s.objects_unchanged} present) "
            f"bytes {s.bytes_copied:10} lag {lag}"
        )
        if s.objects_awaited or s.objects_missing:
            lines.append(
                f"    objects: {s.objects_awaited} awaited from the store's replication, "
                f"{s.objects_missing} missing at the mirror"
            )
        if s.objects_checked_multipart or s.objects_checked_size:
            lines.append(
                f"    checked: {s.objects_checked_md5} by MD5, {s.objects_checked_multipart} by multipart ETag, "
                f"{s.objects_checked_size} by size only"
            )
        if ref.error:
            lines.append(f"    ! {ref.error}")
    return "\n".join(lines)


def add_sync_command(sub: Any) -> None:
    """``sync`` and its flags."""
    sync = sub.add_parser("sync", help="replicate this region's mirrors (no Dagster needed)")
    sync.add_argument("--mirror", help="only this mirror (name or id)")
    sync.add_argument("--branch", action="append", default=[], help="only these branches (repeatable)")
    sync.add_argument("--once", action="store_true", help="one pass, then exit (default: poll forever)")
    sync.add_argument("--max-passes", type=int, default=0, help="stop after this many passes")
    sync.add_argument("--json", action="store_true", help="one JSON document per mirror and pass")
    sync.add_argument(
        "--spark",
        action="store_true",
        help="copy objects in Spark tasks (config spark.master) when a batch reaches spark.transfer_threshold_objects",
    )
    sync.add_argument(
        "--progress",
        choices=["auto", "bar", "lines", "off"],
        default="auto",
        help="auto: a live display on a terminal, else a line to stderr every --progress-every seconds",
    )
    sync.add_argument("--progress-every", type=float, default=10.0, help="seconds between progress lines (10)")
    sync.add_argument(
        "--dry-run",
        action="store_true",
        help="one pass planned, nothing written: which mirror repositories and which branches and tags would be "
        "created, moved or deleted (the ref level: object counts are only known by copying)",
    )
    sync.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (default: metrics.listen_address; none: off)",
    )
    sync.set_defaults(func=_sync)
