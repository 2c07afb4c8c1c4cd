"""``lakefs-mirror``: the command line over the same library the Dagster code location uses."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .command_line import (
    CliParser,
    CommandParser,
    ExitCode,
    add_global_options,
    add_yes_option,
    confirm_destruction,
    exit_code_for,
    format_table,
    log_level_override,
    one_line,
    resolve_mirror,
)
from .command_line.completion import SHELLS, complete_if_asked, completion_script

__all__ = ["build_parser", "main"]

_NO_DEVENV = (
    "lakefs-mirror: the dev devenv and dev demo commands need the development environment (the "
    "lakefs-mirror-devenv distribution, which builds lakeFS and MinIO locally); run them from a checkout: "
    "scripts/dev demo"
)


def _devenv() -> Any:
    """The development environment, a distribution of its own (never part of the runtime wheel)."""
    try:
        import lakefs_mirror_devenv
    except ModuleNotFoundError as exc:
        if exc.name != "lakefs_mirror_devenv":
            raise
        print(_NO_DEVENV, file=sys.stderr)
        raise SystemExit(ExitCode.USAGE) from exc
    return lakefs_mirror_devenv


def _devenv_up(args: argparse.Namespace) -> int:
    devenv = _devenv()
    regions = tuple(devenv.parse_region_spec(r) for r in args.region) if args.region else devenv.DEFAULT_REGIONS
    links = tuple(devenv.parse_link_spec(link) for link in args.link)
    env = devenv.environment_up(
        args.state_dir, regions, with_postgres=args.postgres, with_dynamodb=args.dynamodb, links=links
    )
    print(json.dumps(env.to_json(), indent=2) if args.json else _describe(env.to_json()))
    return 0


def _devenv_status(args: argparse.Namespace) -> int:
    report = _devenv().environment_status(args.state_dir)
    print(json.dumps(report, indent=2))
    healthy = all(r["alive"] and r["healthy"] for r in report["regions"].values())
    healthy = healthy and all(m["alive"] and m["healthy"] for m in report["minio"].values())
    healthy = healthy and report.get("toxiproxy", {"alive": True})["alive"]
    return 0 if healthy else 1


def _devenv_down(args: argparse.Namespace) -> int:
    stopped = _devenv().environment_down(args.state_dir)
    print(f"stopped {len(stopped)} process(es): {' '.join(map(str, stopped)) or '-'}")
    return 0


def _load_config(args: argparse.Namespace) -> Any:
    """The ``--config`` config, its ``logging`` section applied (every command that loads one comes here)."""
    from .config import load_config
    from .logs import configure_logging

    config = load_config(args.config)
    configure_logging(config.logging)
    return config


def _load_service(args: argparse.Namespace) -> Any:
    from .replication import ReplicationService

    return ReplicationService(_load_config(args))


def _sync(args: argparse.Namespace) -> int:
    config = _load_config(args)
    if args.dry_run:
        return _sync_dry_run(args, config)
    from .progress_display import progress_sink
    from .replication import ReplicationService, sync_woken

    metrics_address = _metrics_address(args, config)  # a bad address is refused before anything starts
    session = None
    if args.spark or config.spark.transfer_enabled:  # big plans copy in Spark tasks; the session starts on first use
        from .spark.session import LazySparkSession, spark_session_config
        from .spark.wiring import SparkTransferService

        session = LazySparkSession(spark_session_config(config.spark, app_name="lakefs-mirror-transfer"))
        service: ReplicationService = SparkTransferService(config, session)
    else:
        service = ReplicationService(config)
    if args.mirror:
        try:
            args.mirror = _mirror_of_this_region(service, args.mirror)
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
    # Full passes every process_branches_duration; between them, every validator.run_interval, a retry pass
    # over the blocked branches whose cooldown has ended (none due: nothing printed), and with hooks.enabled,
    # every hooks.poll_interval, a pass over the refs lakeFS hooks queued (replication/hooks.py). Each wake is a pass.
    full_every = config.commit_sensor.process_branches_duration.total_seconds()
    retry_every = config.validator.run_interval.total_seconds()
    next_full = next_retry = time.monotonic()
    ok = True
    try:
        for n in range(args.max_passes if args.max_passes else 1 if args.once else 10**12):
            woken = _wait_for_pass(service, args, min(next_full, next_retry)) if n else []
            if woken:
                results = sync_woken(service, woken, branches=args.branch)
                for result in results:
                    print(json.dumps(result.to_json()) if args.json else format_sync_result(result), flush=True)
                if results:
                    ok = all(r.ok for r in results)
                continue
            full = time.monotonic() >= next_full
            results = service.sync(name=args.mirror, branches=args.branch or None, due_only=not full)
            done = time.monotonic()  # intervals run from the end of a pass, as the sleep between passes did
            next_full, next_retry = (done + full_every if full else next_full), done + retry_every
            if full and args.mirror and not results:
                print(
                    f"lakefs-mirror: no mirror named {args.mirror!r} in region {config.region}",
                    file=sys.stderr,
                )
                return ExitCode.USAGE
            for result in results:
                print(json.dumps(result.to_json()) if args.json else format_sync_result(result), flush=True)
            if full or results:
                ok = all(r.ok for r in results)
    finally:
        display.close()
        service.close()
        if session is not None:
            session.stop()
    return ExitCode.OK if ok else ExitCode.FAILED


def _sync_dry_run(args: argparse.Namespace, config: Any) -> int:
    """One pass planned and printed, nothing written (replication/sync_plan.py says what it covers)."""
    from .replication import ReplicationService, plan_sync

    if args.spark or args.max_passes:
        given = "--spark" if args.spark else "--max-passes"
        print(f"lakefs-mirror: sync --dry-run plans one pass and copies nothing: {given} has no use", file=sys.stderr)
        return ExitCode.USAGE
    service = ReplicationService(config)
    try:
        name = _mirror_of_this_region(service, args.mirror) if args.mirror else None
        plans = plan_sync(service, name=name, branches=args.branch)
    finally:
        service.close()
    if args.mirror and not plans:
        print(f"lakefs-mirror: no mirror named {args.mirror!r} in region {service.config.region}", file=sys.stderr)
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
    from .config import ConfigError, parse_listen_address

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
    from .metrics import SyncMetrics, metrics_registry, start_metrics_server

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
    from .replication.in_flight import clear_in_flight_records

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


def _wait_for_pass(service: Any, args: argparse.Namespace, until: float) -> list[Any]:
    """Sleep until ``until`` (monotonic), or with ``hooks.enabled`` until the wake-up queue names refs of this
    region's mirrors (``wait_woken``): those mirrors, or [] when the time came."""
    from .replication import wait_woken

    if not service.config.hooks.enabled:
        time.sleep(max(0.0, until - time.monotonic()))
        return []
    return wait_woken(service, until, name=args.mirror)


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


def _gc(args: argparse.Namespace) -> int:
    """One garbage-collection deletions pass over this region's mirrors (exit 1 when any mirror failed)."""
    from .replication import run_gc_deletions

    service = _load_service(args)
    try:
        name = _mirror_of_this_region(service, args.mirror) if args.mirror else None
        results = run_gc_deletions(service, name=name, dry_run=args.dry_run)
    finally:
        service.close()
    if args.mirror and not results:
        print(f"lakefs-mirror: no mirror named {args.mirror!r} in region {service.config.region}", file=sys.stderr)
        return ExitCode.USAGE
    for result in results:
        print(json.dumps(result.to_json()) if args.json else format_gc_result(result), flush=True)
    return ExitCode.OK if all(r.ok for r in results) else ExitCode.FAILED


def format_gc_result(result: Any) -> str:
    """A mirror's counts, then each address deleted (or, in a dry run, that would be)."""
    head = f"mirror {result.mirror} <- {result.source_repository} ({result.duration_seconds:.1f}s)"
    if result.skipped:
        return f"{head}: skipped, {result.skipped}"
    verb = "would delete" if result.dry_run else "deleted"
    lines = [
        f"{head}: {verb} {result.deleted} object(s) ({result.bytes_deleted} bytes); {result.listed} listed, "
        f"{result.missing} missing at the source ({result.newly_missing} new, {result.waiting} in the grace period), "
        f"{result.back_at_source} back at the source"
    ]
    if result.error:
        lines.append(f"  ! {result.error}")
    lines.extend(f"  {verb} {address}" for address in result.addresses)
    if result.deleted > len(result.addresses):
        lines.append(f"  ... and {result.deleted - len(result.addresses)} more")
    return "\n".join(lines)


def _mirrors_create(args: argparse.Namespace) -> int:
    service = _load_service(args)
    try:
        mirror = service.create_mirror(
            source_repository=args.repository,
            name=args.name,
            region=args.region,
            storage_namespace=args.storage_namespace,
            storage_id=args.storage_id or "",
            dry_run=args.dry_run,
        )
        if args.dry_run:
            doc = {k: v for k, v in mirror.as_dict().items() if k not in ("id", "created_at", "updated_at")}
            print(json.dumps({"dry_run": True, "would_create": doc}, indent=2))
            hooks = f"; would commit the hook action calling {args.install_hooks}" if args.install_hooks else ""
            print(f"lakefs-mirror: dry run: every check passed, nothing was written{hooks}", file=sys.stderr)
            return ExitCode.OK
        print(json.dumps(mirror.as_dict(), indent=2))
        if args.install_hooks:
            from .replication import ACTION_PATH, install_hooks

            client = service.client(service.config.region)
            commit = install_hooks(
                client, args.repository, args.install_hooks, with_secret=bool(service.config.hooks.secret)
            )
            done = f"committed to {args.repository} as {commit}" if commit else f"already in {args.repository}"
            print(f"lakefs-mirror: hook action {ACTION_PATH} {done}", file=sys.stderr)
    finally:
        service.close()
    return 0


def _mirrors_list(args: argparse.Namespace) -> int:
    service = _load_service(args)
    try:
        kwargs = {"source_repository": args.repository} if args.repository else {}
        mirrors = [m.as_dict() for m in service.iter_mirrors(**kwargs)]
    finally:
        service.close()
    columns = ("name", "region", "source_region", "source_repository", "state", "storage_id", "id")
    print(json.dumps(mirrors, indent=2) if args.json else format_table(mirrors, columns))
    return ExitCode.OK


def _run_demo(args: argparse.Namespace) -> int:
    _devenv()
    from .demo.run import run_demo

    return run_demo(args.state_dir, keep=args.keep)


def _mirrors_get(args: argparse.Namespace) -> int:
    service = _load_service(args)
    try:
        mirror = resolve_mirror(service, args.mirror)
        doc = mirror.as_dict()
        doc["branches"] = [vars(b) for b in service.mirrors.get_branches(mirror.id)]
    finally:
        service.close()
    if args.json:
        print(json.dumps(doc, indent=2, default=str))
        return ExitCode.OK
    fields = {k: v for k, v in doc.items() if k != "branches"}
    print("\n".join(f"{key + ':':19} {value if value not in (None, '') else '-'}" for key, value in fields.items()))
    print()
    columns = ("branch", "source_commit_id", "mirrored_commit_id", "lag_seconds", "promoted_at")
    print(format_table(doc["branches"], columns))
    return ExitCode.OK


def _mirrors_delete(args: argparse.Namespace) -> int:
    from .mirrors import MirrorState

    service = _load_service(args)
    try:
        mirror = service.mirrors.set_state(args.resolved_mirror.id, MirrorState.DELETING, "deleted by CLI", None)
    finally:
        service.close()
    print(
        f"mirror {mirror.name} ({mirror.id}) is being deleted: repository {mirror.name} in region "
        f"{mirror.destination_region} is deleted on that region's next pass (the objects in its storage "
        "namespace stay)"
    )
    return ExitCode.OK


def _mirror_of_this_region(service: Any, value: str) -> str:
    """The name of this region's mirror named ``value`` by name or id (what the engine's calls take)."""
    return str(resolve_mirror(service, value, region=service.config.region).name)


def _describe_delete(args: argparse.Namespace) -> str:
    """Names the mirror the user meant (resolved now, so the question shows its name, region and id)."""
    service = _load_service(args)
    try:
        args.resolved_mirror = mirror = resolve_mirror(service, args.mirror)
    finally:
        service.close()
    return (
        f"delete mirror {mirror.name} in region {mirror.destination_region} (id {mirror.id}) and, on its "
        "region's next pass, its repository"
    )


def _scrub(args: argparse.Namespace) -> int:
    """Re-read a mirror's files and objects at rest, repair what differs from the source; exit 1 if any is left."""
    from .replication.scrub import parse_part

    try:
        part = parse_part(args.part) if args.part else None
    except ValueError as exc:
        print(f"lakefs-mirror scrub: --part: {exc}", file=sys.stderr)
        return 2
    service = _load_service(args)
    try:
        report = service.scrubber(_mirror_of_this_region(service, args.mirror)).scrub(
            branches=args.branch or None, sample=args.sample, part=part, repair=not args.no_repair
        )
    finally:
        service.close()
    doc = report.to_json()
    if args.json:
        print(json.dumps(doc))
    else:
        print(
            f"mirror {report.mirror}: {report.objects_checked} object(s) and {report.metadata_files} metadata "
            f"file(s) read ({report.bytes_read} bytes); checks {report.checks}, {report.compared_with_source} "
            f"compared with the source; {report.damaged_count} damaged, {report.repaired} repaired"
        )
        for line in report.damaged + [f"not repaired: {u}" for u in report.unrepaired] + report.errors:
            print(f"  ! {line}")
    return 0 if report.ok else 1


def _status(args: argparse.Namespace) -> int:
    """Per mirror and branch: mirror head, lag, a sync in flight with its progress, and the last promotions (from
    the Dagster event log)."""
    from .replication.status import format_status, stale, status_report

    service = _load_service(args)
    try:
        args.mirror = _mirror_of_this_region(service, args.mirror) if args.mirror else None
        # Only with --recent is Dagster's event log read (importing Dagster takes seconds), and only where there is
        # an instance: the mirrors database alone answers everything else, --fail-if-lag included.
        recent = args.recent if args.recent > 0 and _dagster_history_available() else 0
        if recent:
            import dagster as dg

            from .orchestration.history import recent_moves

            with dg.DagsterInstance.get() as instance:
                report = status_report(service, recent=recent, mirror=args.mirror, moves=recent_moves(instance))
        else:
            report = status_report(service, recent=0, mirror=args.mirror)
    finally:
        service.close()
    print(json.dumps([m.as_dict() for m in report], indent=2, default=str) if args.json else format_status(report))
    if args.fail_if_lag is None:
        return ExitCode.OK
    problems = stale(report, args.fail_if_lag)
    for line in problems:
        print(f"lakefs-mirror: stale: {line}", file=sys.stderr)
    return ExitCode.STALE if problems else ExitCode.OK


def _dagster_history_available() -> bool:
    """Whether a Dagster instance is there to read promotions from ($DAGSTER_HOME); says on stderr when not."""
    home = os.environ.get("DAGSTER_HOME", "")
    if home and Path(home).is_dir():
        return True
    why = "$DAGSTER_HOME is not set" if not home else f"$DAGSTER_HOME {home} is not a directory"
    print(f"lakefs-mirror: no Dagster instance ({why}): recent promotions are not shown", file=sys.stderr)
    return False


def _serve(args: argparse.Namespace) -> int:
    from .errors import needs_extra
    from .replication import ReplicationService

    with needs_extra("service", "serve (the mirror management REST API)"):
        from .service import load_policies, serve, tls_files

    config = _load_config(args)
    policies_file = str(args.policies or config.auth.policies_file)  # the flag wins over the config
    policies, users = load_policies(policies_file) if policies_file else (None, None)
    tls = tls_files(args.tls_cert or config.tls.cert_file, args.tls_key or config.tls.key_file)
    service = ReplicationService(config)
    try:
        service.fail_storeless_mirrors()  # reported in each such mirror's state; the others are served
        level = logging.getLevelName(config.logging.python_level).lower()  # uvicorn's own lines follow it too
        listen = args.listen or config.listen_address
        serve(
            service,
            listen,
            policies=policies,
            user_policies=users,
            policies_source=policies_file or None,
            tls=tls,
            log_level=level,
        )
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return 0


def _storages_list(args: argparse.Namespace) -> int:
    from .replication import describe_storages

    config = _load_config(args)
    stores = [s.as_dict() for s in describe_storages(config)]
    columns = ("id", "type", "description", "namespace_example")
    print(json.dumps(stores, indent=2) if args.json else format_table(stores, columns))
    return ExitCode.OK


def _openapi(args: argparse.Namespace) -> int:
    from .errors import needs_extra

    with needs_extra("service", "openapi (the REST API's document)"):
        from .service import write_openapi

    print(write_openapi(args.path))
    return 0


def _sst_cat(args: argparse.Namespace) -> int:
    from .graveler import format_sst

    print(format_sst(Path(args.file).read_bytes(), as_json=args.json))
    return 0


def _describe(env: dict[str, Any]) -> str:
    lines = [f"dev environment in {env['state_dir']}"]
    for name, r in env["regions"].items():
        lines.append(
            f"  {name}: lakeFS {r['endpoint']}  storage {r['namespace_root']}  "
            f"key {r['access_key_id']}  (started in {r['startup_seconds']:.1f}s)"
        )
    for name, m in env["minio"].items():
        lines.append(f"  minio {name}: {m['endpoint']}")
    if env.get("postgres"):
        lines.append(f"  postgres pid {env['postgres']['pid']}")
    if env.get("dynamodb"):
        d = env["dynamodb"]
        lines.append(f"  dynamodb local: {d['endpoint']}  table {d['table_name']}  (the regions' mirrors database)")
    for link in env.get("links") or []:
        proxies = env["toxiproxy"]["proxies"]
        through = ", ".join(f"{what} via {proxies[name]}" for what, name in link["proxies"].items())
        lines.append(
            f"  link {link['src']}->{link['dst']}: rtt {link['rtt_ms']:g}ms jitter {link['jitter_ms']:g}ms "
            f"rate {link['rate_bits'] / 1e6:g}Mbit/s ({through}; Toxiproxy API {env['toxiproxy']['api']})"
        )
    lines.append(f"  description: {env['state_dir']}/environment.json")
    return "\n".join(lines)


def version() -> str:
    """The installed distribution's version (what pip installed, which a bug report needs); the package's own
    ``__version__`` where it runs from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("lakefs-mirror-dagster")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    from .refs.cli import add_promote_command, add_refs_commands

    parser = CliParser(prog="lakefs-mirror", description=__doc__, epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"lakefs-mirror {version()}")
    add_global_options(parser, suppress=False)
    # Every parser below is a CommandParser (argparse's default for add_parser is its parent's class): each
    # repeats the global options, so they are accepted after the subcommand too.
    sub = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)

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

    scrub = sub.add_parser("scrub", help="re-read a mirror's bytes at rest, check them, repair from the source")
    scrub.add_argument("mirror", help="the mirror's name or id (a mirror of this region)")
    scrub.add_argument("--branch", action="append", default=[], help="only these branches (default: all refs)")
    scrub.add_argument("--sample", type=float, default=1.0, help="fraction of the objects to read (0 < F <= 1)")
    scrub.add_argument("--part", help="only slice K of N of the ranges, as K/N (e.g. 3/24 each hour)")
    scrub.add_argument("--no-repair", action="store_true", help="report only; exit 1 when anything is damaged")
    scrub.add_argument("--json", action="store_true", help="the report as one JSON document")
    scrub.set_defaults(func=_scrub)

    gc = sub.add_parser(
        "gc",
        help="delete from this region's mirrors the objects garbage collection deleted at their sources "
        "(once missing for garbage_collection.grace_period)",
    )
    gc.add_argument("--mirror", help="only this mirror (name or id)")
    gc.add_argument("--dry-run", action="store_true", help="list what would be deleted; change nothing")
    gc.add_argument("--json", action="store_true", help="one JSON document per mirror")
    gc.set_defaults(func=_gc)
    add_yes_option(gc, _describe_gc)

    mirrors = sub.add_parser("mirrors", help="create and list mirror definitions")
    mirrors_sub = mirrors.add_subparsers(dest="mirrors_command", required=True)
    create = mirrors_sub.add_parser("create", help="define a mirror of a repository of this region")
    create.add_argument("--repository", required=True, help="source repository (in this region)")
    create.add_argument("--name", required=True, help="name of the read-only mirror repository")
    create.add_argument("--region", required=True, help="region the mirror lives in")
    create.add_argument("--storage-namespace", required=True, help="mirror's storage namespace in that region")
    create.add_argument("--storage-id", default="", help="store id in that region (multi-store)")
    create.add_argument(
        "--install-hooks",
        metavar="URL",
        help="also commit a lakeFS action to the source repository's default branch that calls this URL "
        "(serve's /service/replication/v1/hooks/lakefs) on every branch and tag change; changes the source "
        "repository (one commit), idempotent",
    )
    create.add_argument(
        "--dry-run",
        action="store_true",
        help="run every check (regions, source repository, name, store, namespace) and print the mirror that "
        "would be created; write nothing",
    )
    create.set_defaults(func=_mirrors_create)
    lst = mirrors_sub.add_parser("list", help="mirror definitions (all regions)")
    lst.add_argument("--repository", help="only mirrors of this source repository")
    lst.add_argument("--json", action="store_true", help="a JSON list of the mirrors (default: a table)")
    lst.set_defaults(func=_mirrors_list)
    get = mirrors_sub.add_parser("get", help="one mirror with its branches' state")
    get.add_argument("mirror", help=_MIRROR_HELP)
    get.add_argument("--json", action="store_true", help="one JSON document (default: fields, then a branch table)")
    get.set_defaults(func=_mirrors_get)
    delete = mirrors_sub.add_parser("delete", help="delete a mirror (its repository is removed by its region)")
    delete.add_argument("mirror", help=_MIRROR_HELP)
    delete.set_defaults(func=_mirrors_delete)
    add_yes_option(delete, _describe_delete)
    promote, reverse = add_promote_command(mirrors_sub)
    add_yes_option(promote, lambda a: f"make mirror {a.name} of this region a writable repository")
    add_yes_option(reverse, lambda a: f"make repository {a.name} of this region a read-only mirror")
    dump, _ = add_refs_commands(sub)
    add_yes_option(dump, _describe_dump)

    storages = sub.add_parser("storages", help="the stores this region is connected to (blockstores)")
    storages_sub = storages.add_subparsers(dest="storages_command", required=True)
    storages_list = storages_sub.add_parser("list", help="id, type, description and a namespace example of each store")
    storages_list.add_argument("--json", action="store_true", help="a JSON list of the stores (default: a table)")
    storages_list.set_defaults(func=_storages_list)

    status = sub.add_parser(
        "status", help="mirror heads, lag, syncs in flight and recent promotions (Dagster event log)"
    )
    status.add_argument("--mirror", help="only this mirror (name or id)")
    status.add_argument("--recent", type=int, default=5, help="how many promotions per branch")
    status.add_argument("--json", action="store_true", help="one JSON document (heads, lag, in_flight, promotions)")
    status.add_argument(
        "--fail-if-lag",
        type=float,
        metavar="SECONDS",
        help=f"exit {ExitCode.STALE:d} (naming them on stderr) when a branch is further behind its source head "
        "than SECONDS, or a mirror is failed: for cron and monitoring",
    )
    status.set_defaults(func=_status)

    serve = sub.add_parser("serve", help="the mirror management REST API (/service/replication/v1/...)")
    serve.add_argument("--listen", help="HOST:PORT (default: listen_address from the config)")
    serve.add_argument(
        "--policies",
        type=Path,
        help="RBAC policies file (YAML/JSON; default: auth.policies_file); none: every user allowed",
    )
    serve.add_argument("--tls-cert", help="PEM certificate (chain) to serve HTTPS (default: tls.cert_file)")
    serve.add_argument("--tls-key", help="PEM private key of --tls-cert (default: tls.key_file)")
    serve.set_defaults(func=_serve)
    sst = sub.add_parser("sst", help="lakeFS range and metarange files")
    sst_sub = sst.add_subparsers(dest="sst_command", required=True)
    cat = sst_sub.add_parser("cat", help="print a file's properties, records and recomputed ID")
    cat.add_argument("file", type=Path)
    cat.add_argument("--json", action="store_true")
    cat.set_defaults(func=_sst_cat)

    dev = sub.add_parser("dev", help="developer commands: demo, devenv, openapi (not needed to run mirrors)")
    dev_sub = dev.add_subparsers(dest="dev_command", required=True)
    openapi = dev_sub.add_parser("openapi", help="write the REST API's OpenAPI document")
    openapi.add_argument("path", nargs="?", default="docs/openapi.json")
    openapi.set_defaults(func=_openapi)

    demo = dev_sub.add_parser("demo", help="two local regions, a sample repository, a mirror converging")
    demo.add_argument("--state-dir", type=Path, default=None, help="where the demo's servers keep their data")
    demo.add_argument("--keep", action="store_true", help="leave the servers running afterwards")
    demo.set_defaults(func=lambda a: _run_demo(a))

    devenv = dev_sub.add_parser("devenv", help="local lakeFS regions, MinIO and PostgreSQL for dev and tests")
    devenv_sub = devenv.add_subparsers(dest="devenv_command", required=True)
    for name, func, helptext in (
        ("up", _devenv_up, "build (once) and start the servers"),
        ("status", _devenv_status, "health of the started servers"),
        ("down", _devenv_down, "stop exactly the processes `up` started"),
    ):
        p = devenv_sub.add_parser(name, help=helptext)
        p.add_argument(
            "--state-dir",
            type=Path,
            default=None,
            help="where state and data live (default $LAKEFS_MIRROR_DEVENV or the cache dir)",
        )
        p.set_defaults(func=func)
        if name == "up":
            p.add_argument(
                "--region",
                action="append",
                default=[],
                help="NAME[=local|=s3:MINIO] (repeatable; default region-a and region-b, local)",
            )
            p.add_argument("--postgres", action="store_true", help="also start PostgreSQL")
            p.add_argument(
                "--dynamodb",
                action="store_true",
                help="also start DynamoDB Local; the region configs use it as their mirrors database",
            )
            p.add_argument(
                "--link",
                action="append",
                default=[],
                metavar="SRC->DST:rtt=80ms,jitter=5ms,rate=200Mbit",
                help="put what DST's sync reads from SRC behind Toxiproxy with that latency and bandwidth "
                "(repeatable; docs/wan.md)",
            )
            p.add_argument("--json", action="store_true", help="print the description as JSON")

    completion = sub.add_parser("completion", help="print the shell completion script (see docs/cli.md)")
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(func=_completion)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. An expected failure is one line on stderr and the exit status its class maps to
    (``command_line.exit_codes``), never a traceback; a destructive command asks first (``--yes``)."""
    from .config import ConfigError

    parser = build_parser()
    complete_if_asked(parser)
    args = parser.parse_args(argv)
    level = log_level_override(args)
    if level is not None:  # before any command loads its config: the command line wins over logging.level
        from .config import LoggingConfig
        from .logs import configure_logging, override_level

        override_level(level)
        configure_logging(LoggingConfig())
    try:
        confirm_destruction(args)
        return int(args.func(args))
    except Exception as exc:
        code = exit_code_for(exc)
        if code is None:
            raise
        topic = "config: " if isinstance(exc, ConfigError) else ""
        print(f"lakefs-mirror: {topic}{one_line(exc)}", file=sys.stderr)
        return code


_MIRROR_HELP = "the mirror's name or id (a name held by mirrors in several regions needs the id)"

_EPILOG = (
    "Exit status: 0 ok, 1 part of the work failed, 2 usage error or refused, 3 configuration error, "
    "4 lakeFS/database/store unavailable (retry), 5 stale (status --fail-if-lag), 130/143 stopped by "
    "SIGINT/SIGTERM. Global options go before or after the subcommand."
)


def _describe_gc(args: argparse.Namespace) -> str | None:
    if args.dry_run:
        return None
    which = f"mirror {args.mirror}" if args.mirror else "this region's mirrors"
    return f"delete from {which} the objects garbage collection deleted at their sources"


def _describe_dump(args: argparse.Namespace) -> str | None:
    if not args.rm:
        return None
    which = "every writable repository" if args.all else "repositories " + ", ".join(args.repositories)
    return f"remove the records of {which} after dumping them (data kept)"


def _completion(args: argparse.Namespace) -> int:
    print(completion_script(args.shell))
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
